import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { CalendarObject } from '#schemas/calendar';
import { graphCalendars } from '#shared/microsoft/calendars';
import type { GrantRecord } from '#shared/db/grants';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import type { Calendar } from '#shared/providers/contract';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';

/**
 * Provider B's calendars, live (shared/microsoft/calendars.ts), against the local Graph fake: the
 * default calendar as `primary`, create, rename, delete, paging bound to the grant, what Outlook
 * calendars cannot keep refused before Graph is called, a grant of application permissions
 * (`/users/{id}`), and a 429 retried. Every request and answer is checked by the fake against
 * Graph's descriptions; every calendar answered is a CalendarObject as published.
 */
let fake: GraphFake;
let grant: GrantRecord;
let other: GrantRecord;
let email: string;

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validCalendar = ajv.compile(CalendarObject);

function valid<T extends Calendar | { items: Calendar[] }>(answer: T): T {
  for (const calendar of 'items' in answer ? answer.items : [answer])
    expect(validCalendar(calendar), JSON.stringify(validCalendar.errors)).toBe(true);
  return answer;
}

const failure = (call: Promise<unknown>): Promise<unknown> =>
  call.then(
    () => new Error('expected a failure'),
    (error: unknown) => error,
  );

beforeAll(async () => {
  fake = await startGraphFake();
  const first = await connectFakeMicrosoftGrant(fake, 'microsoft live calendars', { displayName: 'Ada' });
  ({ grant, email } = first);
  ({ grant: other } = await connectFakeMicrosoftGrant(fake, 'microsoft live calendars', {
    applicationId: first.applicationId,
  }));
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

describe("Provider B's calendars, live", () => {
  it('answers the default calendar as primary, by name and by its ID', async () => {
    // Act
    const primary = valid(await graphCalendars.get(grant, 'primary'));
    const byId = valid(await graphCalendars.get(grant, fake.calendarId(email)));
    const listed = valid(await graphCalendars.list(grant, {}, 50));

    // Assess
    expect(primary).toEqual({
      id: fake.calendarId(email),
      object: 'calendar',
      grant_id: grant.id,
      name: 'Calendar',
      timezone: 'UTC',
      is_primary: true,
      read_only: false,
      is_owned_by_user: true,
      owner_email: email,
      metadata: {},
    });
    expect(byId).toEqual(primary);
    expect(listed.items[0]).toEqual(primary);
  });

  it('creates, renames and deletes a calendar; the primary one cannot be deleted', async () => {
    // Act
    const created = valid(await graphCalendars.create(grant, { name: 'Projects' }));
    const taken = await failure(graphCalendars.create(grant, { name: 'projects' }));
    const renamed = valid(await graphCalendars.update(grant, created.id, { name: 'Work' }));
    const read = await graphCalendars.get(grant, created.id);
    await graphCalendars.delete(grant, created.id);
    const gone = await failure(graphCalendars.get(grant, created.id));
    const goneAgain = await failure(graphCalendars.delete(grant, created.id));
    const primaryByName = await failure(graphCalendars.delete(grant, 'primary'));
    const primaryById = await failure(graphCalendars.delete(grant, fake.calendarId(email)));
    const renamedPrimary = valid(await graphCalendars.update(grant, 'primary', { name: 'Main' }));

    // Assess
    expect(created).toMatchObject({ name: 'Projects', is_primary: false, read_only: false, is_owned_by_user: true });
    expect(taken).toBeInstanceOf(ConflictError);
    expect(renamed).toMatchObject({ id: created.id, name: 'Work' });
    expect(read.name).toBe('Work');
    expect(gone).toBeInstanceOf(NotFoundError);
    expect(goneAgain).toBeInstanceOf(NotFoundError);
    for (const refused of [primaryByName, primaryById])
      expect((refused as Error).message).toBe('The primary calendar cannot be deleted');
    expect(renamedPrimary).toMatchObject({ name: 'Main', is_primary: true });
  });

  it('refuses what Outlook calendars cannot keep, naming it, before asking Graph', async () => {
    // Prepare
    const before = fake.requests().length;

    // Act
    const refusals = await Promise.all([
      failure(graphCalendars.create(grant, { name: 'Zoned', timezone: 'Europe/Berlin', description: 'x' })),
      failure(graphCalendars.create(grant, { name: 'Coloured', hex_color: '#112233' })),
      failure(graphCalendars.update(grant, 'primary', { metadata: { key1: 'a' } })),
      failure(graphCalendars.list(grant, { metadata_pair: 'key1:a' }, 10)),
      failure(graphCalendars.get(grant, 'not/a/graph/id')),
    ]);

    // Assess
    expect(fake.requests()).toHaveLength(before);
    expect((refusals[0] as Error).message).toMatch(/'description', 'timezone' are not available/);
    expect((refusals[1] as Error).message).toMatch(/'hex_color' is not available/);
    expect((refusals[2] as Error).message).toMatch(/'metadata' is not available/);
    expect(refusals[3]).toBeInstanceOf(InvalidRequestError);
    expect(refusals[4]).toBeInstanceOf(NotFoundError);
  });

  it('pages through Graph’s nextLink with a token only this grant takes', async () => {
    // Prepare
    const [a, b] = [
      await graphCalendars.create(other, { name: 'A' }),
      await graphCalendars.create(other, { name: 'B' }),
    ];

    // Act
    const first = valid(await graphCalendars.list(other, {}, 2));
    const second = valid(await graphCalendars.list(other, { page_token: first.nextCursor! }, 2));
    const elsewhere = await failure(graphCalendars.list(grant, { page_token: first.nextCursor! }, 2));

    // Assess
    expect(first.items.map((c) => c.name)).toEqual(['Calendar', 'A']);
    expect(second.items.map((c) => c.id)).toEqual([b.id]);
    expect(second.nextCursor).toBeUndefined();
    expect(a.id).toBe(first.items[1]!.id);
    expect(elsewhere).toBeInstanceOf(InvalidRequestError);
  });

  it('reads the mailbox of a grant of application permissions through /users/{id}, and retries a 429', async () => {
    // Prepare
    const app = await connectFakeMicrosoftGrant(fake, 'microsoft live calendars, admin consent', {
      settings: { credential_type: 'adminconsent' },
    });
    fake.inject({ path: /\/calendars$/, method: 'GET', status: 429, retryAfter: 1 });
    const before = fake.requests().length;

    // Act
    const listed = valid(await graphCalendars.list(app.grant, {}, 10));

    // Assess
    expect(listed.items.map((c) => c.is_primary)).toEqual([true]);
    const answered = fake.requests().slice(before);
    expect(answered.map((r) => r.status)).toEqual([429, 200]);
    expect(answered.every((r) => r.path.startsWith(`/v1.0/users/${app.userId}/calendars`))).toBe(true);
  });
});
