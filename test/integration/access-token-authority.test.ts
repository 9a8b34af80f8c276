import { beforeAll, describe, expect, it } from 'vitest';
import { getConfiguration, replaceConfiguration } from '#shared/db/scheduling';
import { parseId } from '#shared/ids';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { useApi } from '../support/harness';

/**
 * Who an access token may name. A token opens its own grant's endpoints; every other grant it names in
 * a body (participants of a scheduler configuration, free/busy addresses) is treated exactly like an
 * address that is no grant at all: the same answer, so a token holder learns nothing of the others.
 * A configuration keeps the authority it was saved with, so its public availability and bookings never
 * read more than the token that saved it could. The probe that found it: a token of X saved a
 * configuration naming Y, and the public availability answered slots around Y's busy time.
 */
const { gateway } = useApi();
const anonymous = (): ApiClient => apiClient(gateway().url);

type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
const DAY = 86_400;
/** A day two days ahead, at midnight UTC: always whole, whatever the time of day the test runs. */
const day = () => (Math.floor(Date.now() / 1000 / DAY) + 2) * DAY;
const allDay = [{ days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', start: '8:00', end: '12:00' }];

let owner: ApiClient;
let asX: ApiClient;
let x: Grant;
let y: Grant;

/** The body of a configuration organized by `organizer`, with `others` as participants whose calendars count. */
const configurationBody = (organizer: Grant, others: string[], over: Record<string, unknown> = {}) => ({
  participants: [
    {
      email: organizer.email,
      is_organizer: true,
      availability: { calendar_ids: ['primary'], open_hours: allDay },
      booking: { calendar_id: 'primary' },
    },
    ...others.map((email) => ({ email, availability: { calendar_ids: ['primary'] } })),
  ],
  availability: { duration_minutes: 30, interval_minutes: 30 },
  event_booking: { title: 'Intro call', disable_emails: true },
  scheduler: { min_booking_notice: 0, available_days_in_future: 30 },
  ...over,
});

const slotStarts = (r: ApiResponse) =>
  (r.body.data.time_slots as { start_time: number }[]).map((s) => (s.start_time - day()) / 3600);
const publicAvailability = (configId: string) =>
  anonymous().get(
    `/v3/scheduling/availability?configuration_id=${configId}&start_time=${day()}&end_time=${day() + DAY}`,
  );
/** The 400 a request answers, with the one address that differs between two requests written as `<address>`. */
const refusal = (r: ApiResponse, address: string) => {
  expect(r.status, r.text).toBe(400);
  expect(r.body.error.type).toBe('invalid_request_error');
  return (r.body.error.message as string).replaceAll(address, '<address>');
};

beforeAll(async () => {
  const { applicationId, apiKey } = await makeApplication('token-authority');
  owner = apiClient(gateway().url, apiKey);
  x = await makeAgentGrant(owner);
  y = await makeAgentGrant(owner);
  const token = await anonymous().post('/v3/connect/token', {
    grant_type: 'client_credentials',
    client_id: applicationId,
    client_secret: apiKey,
    grant_id: x.id,
  });
  expect(token.status, token.text).toBe(200);
  asX = apiClient(gateway().url, token.body.access_token as string);
  // Y is busy from 09:00 to 10:00 on the day every availability below looks at.
  const busy = await owner.post(`/v3/grants/${y.id}/events?calendar_id=primary&notify_participants=false`, {
    title: 'Y busy',
    when: { start_time: day() + 9 * 3600, end_time: day() + 10 * 3600 },
  });
  expect(busy.status, busy.text).toBe(201);
});

describe('an access token naming other grants in a scheduler configuration', () => {
  it('is refused exactly as an address that is no grant, and nothing is stored', async () => {
    const nobody = uniqueEmail('nobody');

    const namingY = await asX.post('/v3/grants/me/scheduling/configurations', configurationBody(x, [y.email]));
    const namingNobody = await asX.post('/v3/grants/me/scheduling/configurations', configurationBody(x, [nobody]));
    const namingYById = await asX.post('/v3/grants/me/scheduling/configurations', {
      ...configurationBody(x, []),
      participants: [
        ...configurationBody(x, []).participants,
        { email: y.email, grant_id: y.id, availability: { calendar_ids: ['primary'] } },
      ],
    });

    expect(refusal(namingY, y.email)).toBe(refusal(namingNobody, nobody));
    expect(refusal(namingYById, y.email)).toBe(refusal(namingNobody, nobody));
    expect(namingY.body.error.message).toContain("the token's own grant");
    expect((await owner.get(`/v3/grants/${x.id}/scheduling/configurations`)).body.data).toEqual([]);
  });

  it("saves one naming its own grant only, whose public availability reads that grant's calendar", async () => {
    const saved = await asX.post('/v3/grants/me/scheduling/configurations', configurationBody(x, []));
    expect(saved.status, saved.text).toBe(201);

    const slots = await publicAvailability(saved.body.data.id);

    expect(slots.status, slots.text).toBe(200);
    expect(slotStarts(slots)).toEqual([8, 8.5, 9, 9.5, 10, 10.5, 11, 11.5]);
  });

  it("with the API key names Y, and Y's busy time counts (the same request the token is refused)", async () => {
    const saved = await owner.post(`/v3/grants/${x.id}/scheduling/configurations`, configurationBody(x, [y.email]));
    expect(saved.status, saved.text).toBe(201);

    const slots = await publicAvailability(saved.body.data.id);

    expect(slotStarts(slots)).toEqual([8, 8.5, 10, 10.5, 11, 11.5]);
  });

  it('cannot update a configuration to name Y, nor keep Y in one the API key saved', async () => {
    const own = await asX.post('/v3/grants/me/scheduling/configurations', configurationBody(x, []));
    const byKey = await owner.post(`/v3/grants/${x.id}/scheduling/configurations`, configurationBody(x, [y.email]));
    const nobody = uniqueEmail('nobody');

    const addY = await asX.put(`/v3/grants/me/scheduling/configurations/${own.body.data.id}`, {
      participants: configurationBody(x, [y.email]).participants,
    });
    const addNobody = await asX.put(`/v3/grants/me/scheduling/configurations/${own.body.data.id}`, {
      participants: configurationBody(x, [nobody]).participants,
    });
    const keepY = await asX.put(`/v3/grants/me/scheduling/configurations/${byKey.body.data.id}`, {
      event_booking: { title: 'Renamed by the token' },
    });
    const dropY = await asX.put(`/v3/grants/me/scheduling/configurations/${byKey.body.data.id}`, {
      participants: configurationBody(x, []).participants,
    });

    expect(refusal(addY, y.email)).toBe(refusal(addNobody, nobody));
    expect(refusal(keepY, y.email)).toBe(refusal(addNobody, nobody));
    expect(dropY.status, dropY.text).toBe(200);
    // Saved by the token now: its public availability reads X alone.
    expect(slotStarts(await publicAvailability(byKey.body.data.id))).toEqual([8, 8.5, 9, 9.5, 10, 10.5, 11, 11.5]);
  });

  it("keeps the token's authority in public availability and bookings, whatever the stored participants say", async () => {
    // Prepare: a configuration the token saved, then given Y behind the API's back (a record written
    // before this rule, or by any path that skipped it): its public endpoints still read X alone.
    const saved = await asX.post('/v3/grants/me/scheduling/configurations', configurationBody(x, []));
    const current = (await getConfiguration(parseId('configuration', saved.body.data.id)!))!;
    expect(current.saved_with).toBe('access_token');
    const widened = {
      ...current,
      participants: configurationBody(x, [y.email]).participants,
      version: current.version + 1,
    };
    expect(await replaceConfiguration(current, widened)).toBe(true);

    // Act
    const slots = await publicAvailability(saved.body.data.id);
    const booking = await anonymous().post(`/v3/scheduling/bookings?configuration_id=${saved.body.data.id}`, {
      start_time: day() + 8 * 3600,
      end_time: day() + 8.5 * 3600,
      guest: { name: 'Ann Guest', email: 'ann@guest.example.com' },
    });

    // Assess: Y's calendar is never read; the configuration is refused as one whose participant is gone.
    expect(slots.status, slots.text).toBe(409);
    expect(slots.body.error.message).toContain(y.email);
    expect(booking.status, booking.text).toBe(409);
  });
});

describe('an access token asking free/busy of other grants', () => {
  it("answers Y exactly as an address that is no grant, and its own grant's busy time", async () => {
    const nobody = uniqueEmail('nobody');
    const body = { start_time: day(), end_time: day() + DAY, emails: [y.email, nobody, x.email] };

    const asToken = await asX.post('/v3/grants/me/calendars/free-busy', body);
    const asKey = await owner.post(`/v3/grants/${x.id}/calendars/free-busy`, body);

    expect(asToken.status, asToken.text).toBe(200);
    const [forY, forNobody, forX] = asToken.body.data as { email: string; object: string; error?: string }[];
    expect(forY!.object).toBe('error');
    expect({ ...forY, email: '<address>', error: forY!.error!.replaceAll(y.email, '<address>') }).toEqual({
      ...forNobody,
      email: '<address>',
      error: forNobody!.error!.replaceAll(nobody, '<address>'),
    });
    expect(forX).toMatchObject({ email: x.email, object: 'free_busy', time_slots: [] });
    // The API key reads Y's busy time: the answer above is the token's limit, not an empty calendar.
    expect(asKey.body.data[0]).toMatchObject({
      email: y.email,
      object: 'free_busy',
      time_slots: [{ start_time: day() + 9 * 3600, end_time: day() + 10 * 3600 }],
    });
  });

  it('refuses the application-wide scheduler and availability endpoints', async () => {
    const availability = await asX.post('/v3/calendars/availability', {
      start_time: day(),
      end_time: day() + DAY,
      duration_minutes: 30,
      participants: [{ email: x.email }, { email: y.email }],
    });
    const configurations = await asX.post('/v3/scheduling/configurations', {
      grant_id: y.id,
      ...configurationBody(y, []),
    });
    const sessions = await asX.post('/v3/scheduling/sessions', { configuration_id: 'cfg_x' });

    for (const refused of [availability, configurations, sessions]) {
      expect(refused.status, refused.text).toBe(401);
      expect(refused.body.error.type).toBe('authentication_error');
    }
  });
});
