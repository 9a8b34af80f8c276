import { beforeAll, describe, expect, it } from 'vitest';
import { getConfiguration } from '#shared/db/scheduling';
import { ConflictError } from '#shared/errors';
import { parseId } from '#shared/ids';
import { deleteConfiguration } from '#shared/scheduling/configurations';
import { clock } from '#shared/time';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { useApi } from '../support/harness';
import { jobsDone } from '../support/outbox-relay';

/**
 * Who may reach the scheduler, and what one application can do to another's booking pages:
 * the API key on the public endpoints (its own configurations, private ones included; 401 before
 * the body for a bearer that is neither a key nor a session), slugs unique across applications
 * (race-safe, released with their configuration), https-only links, and participants that must be
 * grants of the application.
 */
const { api, gateway, applicationId } = useApi();
const guestApi = (): ApiClient => apiClient(gateway().url);

/** A second application (B), for what one tenant must not do to another. */
let other: { api: ApiClient; applicationId: string };
beforeAll(async () => {
  const app = await makeApplication('scheduling-access-b');
  other = { api: apiClient(gateway().url, app.apiKey), applicationId: app.applicationId };
});

const DAY = 86_400;
const midnight = (days: number) => (Math.floor(Date.now() / 1000 / DAY) + days) * DAY;
const allDay = [{ days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', start: '9:00', end: '17:00' }];
const unique = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const guest = { name: 'Ann Guest', email: 'ann@guest.example.com' };

type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
const participant = (organizer: Grant) => ({
  email: organizer.email,
  name: 'Bo',
  is_organizer: true,
  availability: { calendar_ids: ['primary'], open_hours: allDay },
  booking: { calendar_id: 'primary' },
});
const body = (organizer: Grant, over: Record<string, unknown> = {}) => ({
  participants: [participant(organizer)],
  availability: { duration_minutes: 30, interval_minutes: 30 },
  event_booking: { title: 'Intro call' },
  scheduler: { min_booking_notice: 0, available_days_in_future: 30 },
  ...over,
});

async function configuration(over: Record<string, unknown> = {}, client: ApiClient = api) {
  const organizer = await makeAgentGrant(client);
  const response = await client.post(`/v3/grants/${organizer.id}/scheduling/configurations`, body(organizer, over));
  expect(response.status, response.text).toBe(201);
  return { organizer, config: response.body.data as { id: string; slug: string | null; [k: string]: unknown } };
}

function expectError(response: ApiResponse, status: number, type: string, message?: RegExp | string) {
  expect(response.status, response.text).toBe(status);
  expect(response.body.request_id).toEqual(expect.any(String));
  expect(response.body.error.type).toBe(type);
  if (typeof message === 'string') expect(response.body.error.message).toContain(message);
  else if (message) expect(response.body.error.message).toMatch(message);
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const window = (day: number) => `start_time=${day}&end_time=${day + DAY}`;
const slotStarts = (r: ApiResponse) => (r.body.data.time_slots as { start_time: number }[]).map((s) => s.start_time);
/** Subjects and bodies of a grant's inbox once the jobs committed so far (the scheduler's mails) have run. */
const inbox = async (grantId: string) => {
  await jobsDone();
  return (await api.get(`/v3/grants/${grantId}/messages?in=inbox`)).body.data as { subject: string; body: string }[];
};

describe('the API key on the public scheduler endpoints', () => {
  it("opens the application's configurations, private ones included, by ID or by slug (client_id optional); another application's are 404", async () => {
    // Prepare
    const slug = `key-${unique()}`;
    const { config } = await configuration({ slug, requires_session_auth: true });
    const day = midnight(2);

    // Act
    const anonymous = await guestApi().get(`/v3/scheduling/availability?configuration_id=${config.id}&${window(day)}`);
    const byId = await api.get(`/v3/scheduling/availability?configuration_id=${config.id}&${window(day)}`);
    const bySlug = await api.get(`/v3/scheduling/availability?slug=${slug}&${window(day)}`);
    const bySlugAndClient = await api.get(
      `/v3/scheduling/availability?slug=${slug}&client_id=${applicationId()}&${window(day)}`,
    );
    const bySlugOtherClient = await api.get(
      `/v3/scheduling/availability?slug=${slug}&client_id=${other.applicationId}&${window(day)}`,
    );
    const otherById = await other.api.get(`/v3/scheduling/availability?configuration_id=${config.id}&${window(day)}`);
    const otherBySlug = await other.api.get(`/v3/scheduling/availability?slug=${slug}&${window(day)}`);
    const otherBySlugAndClient = await other.api.get(
      `/v3/scheduling/availability?slug=${slug}&client_id=${applicationId()}&${window(day)}`,
    );

    // Assess
    expectError(anonymous, 401, 'authentication_error', /private/);
    expect(byId.status, byId.text).toBe(200);
    expect(slotStarts(byId)).toHaveLength(16);
    expect(bySlug.status, bySlug.text).toBe(200);
    expect(bySlug.body.data).toEqual(byId.body.data);
    expect(bySlugAndClient.body.data).toEqual(byId.body.data);
    expectError(bySlugOtherClient, 404, 'not_found_error');
    expectError(otherById, 404, 'not_found_error', config.id);
    expectError(otherBySlug, 404, 'not_found_error', slug);
    expectError(otherBySlugAndClient, 404, 'not_found_error');
  });

  it('books, reads, reschedules and cancels on a private configuration with the API key; another application cannot touch the booking', async () => {
    // Prepare
    const { organizer, config } = await configuration({ requires_session_auth: true });
    const day = midnight(3);
    const start = day + 10 * 3600;
    const q = `configuration_id=${config.id}`;

    // Act + Assess: create.
    const created = await api.post(`/v3/scheduling/bookings?${q}`, {
      start_time: start,
      end_time: start + 1800,
      guest,
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.data.booking_id as string;
    expect(created.body.data).toMatchObject({
      status: 'booked',
      start_time: start,
      organizer: { email: organizer.email },
    });
    // Without the key the private configuration stays closed; another application's key finds nothing.
    expectError(await guestApi().get(`/v3/scheduling/bookings/${id}?${q}`), 401, 'authentication_error');
    expectError(await other.api.get(`/v3/scheduling/bookings/${id}?${q}`), 404, 'not_found_error');
    expectError(
      await other.api.patch(`/v3/scheduling/bookings/${id}?${q}`, { start_time: start + 1800, end_time: start + 3600 }),
      404,
      'not_found_error',
    );
    expectError(await other.api.request('DELETE', `/v3/scheduling/bookings/${id}?${q}`), 404, 'not_found_error');
    expectError(
      await other.api.post(`/v3/scheduling/bookings?${q}`, { start_time: start + 3600, end_time: start + 5400, guest }),
      404,
      'not_found_error',
    );

    // Read, move, cancel.
    const found = await api.get(`/v3/scheduling/bookings/${id}?${q}`);
    expect(found.status, found.text).toBe(200);
    expect(found.body.data).toMatchObject({ booking_id: id, status: 'booked', start_time: start });
    const moved = await api.patch(`/v3/scheduling/bookings/${id}?${q}`, {
      start_time: start + 1800,
      end_time: start + 3600,
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data).toMatchObject({ start_time: start + 1800, status: 'booked' });
    const free = slotStarts(await api.get(`/v3/scheduling/availability?${q}&${window(day)}`));
    expect(free).toContain(start);
    expect(free).not.toContain(start + 1800);
    const cancelled = await api.request('DELETE', `/v3/scheduling/bookings/${id}?${q}`, {
      body: { cancellation_reason: 'Moved on' },
    });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.data).toMatchObject({ status: 'cancelled', cancellation_reason: 'Moved on' });
    // Nothing the other application sent changed anything: the one booking, moved once, then cancelled.
    expect((await api.get(`/v3/scheduling/bookings/${id}?${q}`)).body.data).toMatchObject({
      status: 'cancelled',
      start_time: start + 1800,
    });
  });

  it('confirms a pending booking of a private organizer-confirmation configuration with the salt', async () => {
    // Prepare
    const { organizer, config } = await configuration({
      requires_session_auth: true,
      event_booking: { title: 'Review', booking_type: 'organizer-confirmation' },
      scheduler: { min_booking_notice: 0, organizer_confirmation_url: 'https://app.example.com/confirm' },
    });
    const day = midnight(4);
    const q = `configuration_id=${config.id}`;
    const created = await api.post(`/v3/scheduling/bookings?${q}`, {
      start_time: day + 9 * 3600,
      end_time: day + 9 * 3600 + 1800,
      guest,
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data.status).toBe('pending');
    const id = created.body.data.booking_id as string;
    await expect.poll(async () => (await inbox(organizer.id)).length, { timeout: 30_000 }).toBe(1);
    const link = /https:\/\/app\.example\.com\/confirm\?booking_reference=([A-Za-z0-9_-]+)/.exec(
      (await inbox(organizer.id))[0]!.body,
    )![1]!;
    const salt = Buffer.from(link, 'base64url').toString('utf8').split(':')[2]!;

    // Act
    const foreign = await other.api.put(`/v3/scheduling/bookings/${id}?${q}`, { salt, status: 'confirmed' });
    const wrongSalt = await api.put(`/v3/scheduling/bookings/${id}?${q}`, {
      salt: 'not-the-salt',
      status: 'confirmed',
    });
    const confirmed = await api.put(`/v3/scheduling/bookings/${id}?${q}`, { salt, status: 'confirmed' });

    // Assess
    expectError(foreign, 404, 'not_found_error');
    expectError(wrongSalt, 404, 'not_found_error');
    expect(confirmed.status, confirmed.text).toBe(200);
    expect(confirmed.body.data.status).toBe('booked');
  });

  it('answers 401 for a bearer that is neither an API key nor a live session, before the body is read or validated', async () => {
    // Prepare
    const { config } = await configuration();
    const day = midnight(5);
    const start = day + 9 * 3600;
    const q = `configuration_id=${config.id}`;
    const booked = await guestApi().post(`/v3/scheduling/bookings?${q}`, {
      start_time: start,
      end_time: start + 1800,
      guest,
    });
    expect(booked.status, booked.text).toBe(201);
    const id = booked.body.data.booking_id as string;
    const session = (await api.post('/v3/scheduling/sessions', { configuration_id: config.id, time_to_live: 1 })).body
      .data.session_id as string;
    const deleted = (await api.post('/v3/scheduling/sessions', { configuration_id: config.id })).body.data
      .session_id as string;
    expect((await api.delete(`/v3/scheduling/sessions/${deleted}`)).status).toBe(200);
    const invalidBody = { start_time: 'soon', guest: 42, surprise: true };
    const requests: [string, string, unknown][] = [
      ['GET', `/v3/scheduling/availability?${q}&start_time=later`, undefined],
      ['POST', `/v3/scheduling/bookings?${q}`, invalidBody],
      ['GET', `/v3/scheduling/bookings/${id}?${q}&surprise=1`, undefined],
      ['PUT', `/v3/scheduling/bookings/${id}?${q}`, invalidBody],
      ['PATCH', `/v3/scheduling/bookings/${id}?${q}`, invalidBody],
      ['DELETE', `/v3/scheduling/bookings/${id}?${q}`, invalidBody],
    ];
    // Sentinel: without the header the same requests are refused by validation (400), so a 401 says auth came first.
    for (const [method, path, data] of requests) {
      expectError(
        await guestApi().request(method, path, data === undefined ? {} : { body: data }),
        400,
        'invalid_request_error',
      );
    }

    // Act + Assess
    const restore = clock.set(() => Date.now() + 2 * 60_000);
    try {
      for (const token of ['sbk_not-a-key-of-this-deployment', 'ses_not-a-session', deleted, session]) {
        for (const [method, path, data] of requests) {
          const response = await guestApi().request(method, path, {
            ...(data === undefined ? {} : { body: data }),
            headers: bearer(token),
          });
          expectError(response, 401, 'authentication_error', /neither a valid API key nor a live scheduler session/);
        }
        // A body that is not even JSON is not read either.
        const raw = await guestApi().request('POST', `/v3/scheduling/bookings?${q}`, {
          rawBody: '{"start_time":',
          headers: { ...bearer(token), 'content-type': 'application/json' },
        });
        expectError(raw, 401, 'authentication_error');
      }
      // A malformed header is refused as such, before the body too.
      for (const authorization of ['Basic dXNlcjpwYXNz', 'Bearer', 'Bearer  ']) {
        expectError(
          await guestApi().request('POST', `/v3/scheduling/bookings?${q}`, {
            body: invalidBody,
            headers: { authorization },
          }),
          401,
          'authentication_error',
        );
      }
    } finally {
      restore();
    }
    // A valid request with a bad key changes nothing: the booking is as it was, the next slot still free.
    const next = await guestApi().post(
      `/v3/scheduling/bookings?${q}`,
      { start_time: start + 1800, end_time: start + 3600, guest },
      bearer('sbk_not-a-key'),
    );
    expectError(next, 401, 'authentication_error');
    expect((await api.get(`/v3/scheduling/bookings/${id}?${q}`)).body.data).toMatchObject({
      status: 'booked',
      start_time: start,
    });
    expect(slotStarts(await api.get(`/v3/scheduling/availability?${q}&${window(day)}`))).toContain(start + 1800);
  });

  it('keeps sessions and public access as they were', async () => {
    // Prepare
    const { config } = await configuration({ requires_session_auth: true });
    const { config: open } = await configuration();
    const day = midnight(6);
    const session = (await api.post('/v3/scheduling/sessions', { configuration_id: config.id })).body.data
      .session_id as string;

    // Act
    const viaSession = await guestApi().get(`/v3/scheduling/availability?${window(day)}`, bearer(session));
    // A session names its own configuration whatever the query says.
    const viaSessionOtherQuery = await guestApi().get(
      `/v3/scheduling/availability?configuration_id=${open.id}&${window(day)}`,
      bearer(session),
    );
    const publicOne = await guestApi().get(`/v3/scheduling/availability?configuration_id=${open.id}&${window(day)}`);
    const emptyHeader = await guestApi().get(`/v3/scheduling/availability?configuration_id=${open.id}&${window(day)}`, {
      authorization: '',
    });

    // Assess
    expect(viaSession.status, viaSession.text).toBe(200);
    expect(slotStarts(viaSession)).toHaveLength(16);
    expect(viaSessionOtherQuery.status).toBe(200);
    expect(publicOne.status, publicOne.text).toBe(200);
    expect(emptyHeader.status, emptyHeader.text).toBe(200);
    expectError(
      await guestApi().get(`/v3/scheduling/availability?slug=x&${window(day)}`),
      400,
      'invalid_request_error',
      'client_id',
    );
  });
});

describe('slugs are unique across applications', () => {
  it('refuses a slug another application uses (409 naming it) and the booking page keeps pointing at the first', async () => {
    // Prepare
    const slug = `taken-${unique()}`;
    await configuration({ slug, event_booking: { title: 'Alpha call' } });
    const organizerB = await makeAgentGrant(other.api);
    const before = (await other.api.get('/v3/scheduling/configurations')).body.data.length as number;

    // Act
    const create = await other.api.post(
      `/v3/grants/${organizerB.id}/scheduling/configurations`,
      body(organizerB, { slug, event_booking: { title: 'Beta call' } }),
    );
    const own = await other.api.post(
      `/v3/grants/${organizerB.id}/scheduling/configurations`,
      body(organizerB, { slug: `${slug}-b`, event_booking: { title: 'Beta call' } }),
    );
    expect(own.status, own.text).toBe(201);
    const update = await other.api.put(`/v3/scheduling/configurations/${own.body.data.id}`, { slug });

    // Assess
    expectError(create, 409, 'conflict_error', `'${slug}'`);
    expectError(update, 409, 'conflict_error', `'${slug}'`);
    expect((await other.api.get(`/v3/scheduling/configurations/${own.body.data.id}`)).body.data).toMatchObject({
      slug: `${slug}-b`,
    });
    expect((await other.api.get('/v3/scheduling/configurations')).body.data).toHaveLength(before + 1);
    const page = await guestApi().get(`/scheduling/${slug}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('Alpha call');
    expect(page.text).not.toContain('Beta call');
    expect((await guestApi().get(`/scheduling/${slug}?client_id=${applicationId()}`)).status).toBe(200);
    expect((await guestApi().get(`/scheduling/${slug}?client_id=${other.applicationId}`)).status).toBe(404);
    expect(
      (
        await guestApi().get(
          `/v3/scheduling/availability?slug=${slug}&client_id=${other.applicationId}&${window(midnight(2))}`,
        )
      ).status,
    ).toBe(404);
  });

  it('releases a slug when its configuration moves to another slug or is deleted', async () => {
    // Prepare
    const [first, second] = [`first-${unique()}`, `second-${unique()}`];
    const { config } = await configuration({ slug: first, event_booking: { title: 'Alpha call' } });
    const organizerB = await makeAgentGrant(other.api);

    // Act + Assess: A moves to the second slug; the first is free, the second taken.
    expect((await api.put(`/v3/scheduling/configurations/${config.id}`, { slug: second })).status).toBe(200);
    const takesFirst = await other.api.post(
      `/v3/grants/${organizerB.id}/scheduling/configurations`,
      body(organizerB, { slug: first, event_booking: { title: 'Beta call' } }),
    );
    expect(takesFirst.status, takesFirst.text).toBe(201);
    expect((await guestApi().get(`/scheduling/${first}`)).text).toContain('Beta call');
    expect((await guestApi().get(`/scheduling/${second}`)).text).toContain('Alpha call');
    expectError(
      await other.api.put(`/v3/scheduling/configurations/${takesFirst.body.data.id}`, { slug: second }),
      409,
      'conflict_error',
      second,
    );

    // A deletes its configuration: the second slug is free for B.
    expect((await api.delete(`/v3/scheduling/configurations/${config.id}`)).status).toBe(200);
    expect((await guestApi().get(`/scheduling/${second}`)).status).toBe(404);
    const moves = await other.api.put(`/v3/scheduling/configurations/${takesFirst.body.data.id}`, { slug: second });
    expect(moves.status, moves.text).toBe(200);
    expect((await guestApi().get(`/scheduling/${second}`)).text).toContain('Beta call');
    expect((await guestApi().get(`/scheduling/${first}`)).status).toBe(404);
  });

  it('never leaves a slug reserved by a deleted configuration: a delete of an outdated copy is refused', async () => {
    // Prepare: a copy read before the configuration moved to another slug.
    const [first, second] = [`stale-${unique()}`, `moved-${unique()}`];
    const { config } = await configuration({ slug: first, event_booking: { title: 'Alpha call' } });
    const stale = (await getConfiguration(parseId('configuration', config.id)!))!;
    expect((await api.put(`/v3/scheduling/configurations/${config.id}`, { slug: second })).status).toBe(200);

    // Act
    const deleting = deleteConfiguration(stale);

    // Assess: refused; the configuration and its current slug are untouched.
    await expect(deleting).rejects.toBeInstanceOf(ConflictError);
    expect((await api.get(`/v3/scheduling/configurations/${config.id}`)).body.data.slug).toBe(second);
    expect((await guestApi().get(`/scheduling/${second}`)).text).toContain('Alpha call');
    expect((await api.delete(`/v3/scheduling/configurations/${config.id}`)).status).toBe(200);
    const organizerB = await makeAgentGrant(other.api);
    expect(
      (
        await other.api.post(
          `/v3/grants/${organizerB.id}/scheduling/configurations`,
          body(organizerB, { slug: second }),
        )
      ).status,
    ).toBe(201);
  });

  it('gives a slug to exactly one of many concurrent creations from two applications', async () => {
    // Prepare
    const slug = `race-${unique()}`;
    const organizers = await Promise.all([
      makeAgentGrant(api),
      makeAgentGrant(api),
      makeAgentGrant(api),
      makeAgentGrant(other.api),
      makeAgentGrant(other.api),
      makeAgentGrant(other.api),
    ]);
    const clients = [api, api, api, other.api, other.api, other.api];

    // Act
    const results = await Promise.all(
      organizers.map((o, i) => clients[i]!.post(`/v3/grants/${o.id}/scheduling/configurations`, body(o, { slug }))),
    );

    // Assess
    const statuses = results.map((r) => r.status);
    expect(
      statuses.filter((s) => s === 201),
      JSON.stringify(statuses),
    ).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(5);
    const winner = results.find((r) => r.status === 201)!.body.data;
    const owner = clients[results.findIndex((r) => r.status === 201)]!;
    expect((await owner.get(`/v3/scheduling/configurations/${winner.id}`)).body.data.slug).toBe(slug);
    const page = await guestApi().get(`/scheduling/${slug}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(winner.id);
  });
});

describe('links a configuration stores', () => {
  const FIELDS: [string, (url: string) => Record<string, unknown>][] = [
    [
      'scheduler.confirmation_redirect_url',
      (url) => ({ scheduler: { min_booking_notice: 0, confirmation_redirect_url: url } }),
    ],
    ['scheduler.rescheduling_url', (url) => ({ scheduler: { min_booking_notice: 0, rescheduling_url: url } })],
    ['scheduler.cancellation_url', (url) => ({ scheduler: { min_booking_notice: 0, cancellation_url: url } })],
    [
      'scheduler.organizer_confirmation_url',
      (url) => ({ scheduler: { min_booking_notice: 0, organizer_confirmation_url: url } }),
    ],
    [
      'event_booking.conferencing.details.url',
      (url) => ({ event_booking: { title: 'Call', conferencing: { provider: 'Zoom Meeting', details: { url } } } }),
    ],
  ];
  const BAD = [
    'javascript:alert(document.cookie)',
    'JavaScript:alert(1)',
    'vbscript:msgbox(1)',
    'data:text/html,<script>alert(1)</script>',
    'http://example.com/booked',
    'http://10.0.0.1/booked',
    '/booked',
    'booked.example.com/x',
  ];

  it('refuses javascript:, vbscript:, data:, http: to other hosts and relative URLs in every link field, naming the field; nothing is stored', async () => {
    // Prepare
    const { organizer, config } = await configuration();
    const before = (await api.get(`/v3/scheduling/configurations?grant_id=${organizer.id}`)).body.data;

    for (const [field, shape] of FIELDS) {
      for (const url of BAD) {
        // Act
        const created = await api.post(
          `/v3/grants/${organizer.id}/scheduling/configurations`,
          body(organizer, shape(url)),
        );
        const updated = await api.put(`/v3/scheduling/configurations/${config.id}`, shape(url));

        // Assess
        for (const response of [created, updated]) {
          expect(response.status, `${field} = ${url}: ${response.text}`).toBe(400);
          expect(response.body.error.type).toBe('invalid_request_error');
          expect(response.body.error.message).toContain(field);
        }
      }
    }
    expect((await api.get(`/v3/scheduling/configurations?grant_id=${organizer.id}`)).body.data).toEqual(before);
  });

  it('accepts https, and plain http to loopback hosts in local mode', async () => {
    const { organizer } = await configuration();
    for (const url of [
      'https://app.example.com/booked?x=1',
      'http://127.0.0.1:8080/booked',
      'http://localhost:3000/booked',
      'http://[::1]:8080/booked',
    ]) {
      for (const [field, shape] of FIELDS) {
        const created = await api.post(
          `/v3/grants/${organizer.id}/scheduling/configurations`,
          body(organizer, shape(url)),
        );
        expect(created.status, `${field} = ${url}: ${created.text}`).toBe(201);
        const stored = (await api.get(`/v3/scheduling/configurations/${created.body.data.id}`)).body.data;
        expect(field.split('.').reduce((o, k) => o?.[k], stored)).toBe(url);
      }
    }
  });
});

describe('participants of a configuration', () => {
  it('must be grants of the application: 400 naming each one that is not, on create and update; nothing is stored', async () => {
    // Prepare
    const organizer = await makeAgentGrant(api);
    const colleague = await makeAgentGrant(api);
    const foreign = await makeAgentGrant(other.api);
    const stranger = `stranger-${unique()}@example.com`;
    const member = (g: { email: string }) => ({ email: g.email, availability: { calendar_ids: ['primary'] } });
    const path = `/v3/grants/${organizer.id}/scheduling/configurations`;

    // Act
    const withStrangers = await api.post(
      path,
      body(organizer, {
        participants: [participant(organizer), member(colleague), { email: stranger }, member(foreign)],
      }),
    );
    const byForeignGrantId = await api.post(
      path,
      body(organizer, { participants: [participant(organizer), { email: colleague.email, grant_id: foreign.id }] }),
    );
    const good = await api.post(path, body(organizer, { participants: [participant(organizer), member(colleague)] }));
    expect(good.status, good.text).toBe(201);
    const update = await api.put(`/v3/scheduling/configurations/${good.body.data.id}`, {
      participants: [participant(organizer), member(colleague), { email: stranger }],
    });

    // Assess
    expectError(withStrangers, 400, 'invalid_request_error', stranger);
    expect(withStrangers.body.error.message).toContain(foreign.email);
    expect(withStrangers.body.error.message).not.toContain(colleague.email);
    expect(withStrangers.body.error.message).not.toContain(organizer.email);
    expectError(byForeignGrantId, 400, 'invalid_request_error', colleague.email);
    expectError(update, 400, 'invalid_request_error', stranger);
    expect(
      (await api.get(`/v3/scheduling/configurations?grant_id=${organizer.id}`)).body.data.map(
        (c: { id: string }) => c.id,
      ),
    ).toEqual([good.body.data.id]);
    expect(
      (await api.get(`/v3/scheduling/configurations/${good.body.data.id}`)).body.data.participants.map(
        (p: { email: string }) => p.email,
      ),
    ).toEqual([organizer.email, colleague.email]);
    // The configuration that passed books with both calendars deciding.
    const slots = await guestApi().get(
      `/v3/scheduling/availability?configuration_id=${good.body.data.id}&${window(midnight(2))}`,
    );
    expect(slots.status, slots.text).toBe(200);
  });
});
