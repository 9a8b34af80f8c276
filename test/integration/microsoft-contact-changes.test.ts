import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { ContactObject } from '#schemas/contact';
import { graphContactChanges } from '#shared/microsoft/contact-changes';
import { graphContacts } from '#shared/microsoft/contacts';
import type { GrantRecord } from '#shared/db/grants';
import { createSyncState, getSyncState } from '#shared/db/mail-sync';
import type { Notification } from '#shared/notifications/notification';
import type { GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';
import { syncRun, syncRunFor } from '../support/sync-run';

/**
 * Provider B's contact changes (shared/microsoft/contact-changes.ts) against the local Graph fake:
 * each contact folder's contacts/delta (the default folder's `/contacts/delta` and each
 * `contactFolders/{id}/contacts/delta`) from its deltaLink becomes contact.updated / contact.deleted,
 * committed with the link under the run's lease, as shared/services/mail-sync.ts runs it. Every
 * request and answer is checked by the fake against Graph's descriptions.
 */
let fake: GraphFake;
let grant: GrantRecord;
let email: string;
/** How far both clocks (ours and the fake's) have been moved on: time passing between runs. */
let ahead = 0;
let restoreClock: () => void;

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
const validContact = ajv.compile(ContactObject);

beforeAll(async () => {
  restoreClock = clock.set(() => Date.now() + ahead);
  fake = await startGraphFake({ now: () => Date.now() + ahead });
  ({ grant, email } = await connectFakeMicrosoftGrant(fake, 'microsoft contact changes'));
  await createSyncState(grant.id as GrantId, grant.application_id as never, clock.nowSeconds());
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  restoreClock?.();
  await fake?.close();
});

/** One run, as the service makes it, a minute after the last: the notifications it committed, in order. */
const run = () => {
  ahead += 60_000;
  return syncRun(grant, graphContactChanges);
};

/** One run that is out of time after `checks` questions; its outcome and what it committed. */
const runFor = (checks: number) => syncRunFor(grant, graphContactChanges, checks);

const kinds = (notifications: Notification[]) =>
  notifications.map((n) => `${n.type} ${(n.data.object as { id: string }).id}`);
const cursors = async () => (await getSyncState(grant.id as GrantId))!.graph_contacts!.folders;
const outside = (contact: Record<string, unknown>, folder?: string) =>
  fake.changeContactOutside(email, { kind: 'createContact', contact, ...(folder ? { folder } : {}) })!.id;

describe("provider B's contact changes", () => {
  let friends = '';

  it('takes a baseline of every folder on its first run and announces nothing that was there before', async () => {
    outside({ givenName: 'Old', emailAddresses: [{ address: 'old@example.org' }] });
    friends = (await graphContacts.createGroup(grant, { name: 'Friends' })).id;
    outside({ givenName: 'Old friend' }, friends);
    expect(await run()).toEqual([]);
    const folders = await cursors();
    expect(Object.keys(folders).sort()).toEqual(['default', friends].sort());
    expect(Object.values(folders).every((c) => c.delta_link && !c.silent && !c.next_link)).toBe(true);
    expect(await run()).toEqual([]);
  });

  it('announces a contact created elsewhere once, as contact.updated, as GET answers it', async () => {
    const id = outside({ givenName: 'Nora', companyName: 'Acme', businessPhones: ['+1 555 0100'] }, friends);
    const created = await run();
    expect(kinds(created)).toEqual([`contact.updated ${id}`]);
    expect(created[0]!.data.object).toEqual(await graphContacts.get(grant, id, {}));
    expect(validContact(created[0]!.data.object), JSON.stringify(validContact.errors)).toBe(true);
    expect(created[0]!.data.object).toMatchObject({ given_name: 'Nora', groups: [{ id: friends }] });
    expect(await run()).toEqual([]);
  });

  it('announces a change and a deletion made elsewhere once each', async () => {
    const id = outside({ givenName: 'Pat' });
    expect(kinds(await run())).toEqual([`contact.updated ${id}`]);
    fake.changeContactOutside(email, { kind: 'updateContact', id, contact: { jobTitle: 'Editor' } });
    const updated = await run();
    expect(kinds(updated)).toEqual([`contact.updated ${id}`]);
    expect(updated[0]!.data.object).toMatchObject({ given_name: 'Pat', job_title: 'Editor', groups: [] });
    expect(await run()).toEqual([]);
    fake.changeContactOutside(email, { kind: 'deleteContact', id });
    const deleted = await run();
    expect(kinds(deleted)).toEqual([`contact.deleted ${id}`]);
    expect(deleted[0]!.data.object).toEqual({ id, object: 'contact', grant_id: grant.id });
    expect(await run()).toEqual([]);
  });

  it('announces what a folder made since the last run holds; a folder deleted loses its cursor', async () => {
    const work = (await graphContacts.createGroup(grant, { name: 'Work' })).id;
    const id = outside({ givenName: 'Quinn' }, work);
    expect(kinds(await run())).toEqual([`contact.updated ${id}`]);
    expect(Object.keys(await cursors())).toContain(work);
    await graphContacts.delete(grant, id);
    await graphContacts.deleteGroup(grant, work);
    expect(await run()).toEqual([]);
    expect(Object.keys(await cursors())).not.toContain(work);
  });

  it('after an expired link, announces only the contacts changed since the last round began', async () => {
    const changed = outside({ givenName: 'Ruth' });
    const quiet = outside({ givenName: 'Sam' }, friends);
    expect(kinds(await run()).sort()).toEqual([`contact.updated ${changed}`, `contact.updated ${quiet}`].sort());
    fake.expireContactDelta(email);
    ahead += 60_000;
    fake.changeContactOutside(email, { kind: 'updateContact', id: changed, contact: { surname: 'Stone' } });
    const recovered = await run();
    expect(kinds(recovered)).toEqual([`contact.updated ${changed}`]);
    expect(recovered[0]!.data.object).toMatchObject({ given_name: 'Ruth', surname: 'Stone' });
    expect(Object.values(await cursors()).every((c) => c.delta_link && c.changed_since === undefined)).toBe(true);
    expect(await run()).toEqual([]);
  });

  it('stops when out of time and goes on from the link it committed, announcing nothing twice', async () => {
    const inDefault = outside({ givenName: 'Tess' });
    const inFriends = outside({ givenName: 'Uma' }, friends);
    const first = await runFor(1);
    expect(first.outcome).toEqual({ status: 'more', changed: true });
    expect(kinds(first.committed)).toEqual([`contact.updated ${inDefault}`]);
    const rest = await runFor(100);
    expect(rest.outcome).toEqual({ status: 'done', changed: true });
    expect(kinds(rest.committed)).toEqual([`contact.updated ${inFriends}`]);
    expect(await run()).toEqual([]);
  });

  it('stops mid-round after a page and goes on from its nextLink; each contact announced once', async () => {
    const ids = Array.from({ length: 95 }, (_, i) => outside({ givenName: `Many ${i}` }));
    const first = await runFor(1);
    expect(first.outcome).toEqual({ status: 'more', changed: true });
    expect(first.committed).toHaveLength(90);
    expect((await cursors()).default).toMatchObject({ next_link: expect.any(String), round_at: expect.any(Number) });
    const rest = await runFor(100);
    expect(rest.outcome.status).toBe('done');
    expect(kinds([...first.committed, ...rest.committed]).sort()).toEqual(
      ids.map((id) => `contact.updated ${id}`).sort(),
    );
    expect(await run()).toEqual([]);
  });

  it('retries a delta page Graph throttled, and commits nothing twice', async () => {
    const id = outside({ givenName: 'Vera' });
    fake.inject({ path: /\/contacts\/delta$/, method: 'GET', status: 429, retryAfter: 0 });
    expect(kinds(await run())).toEqual([`contact.updated ${id}`]);
    expect(fake.requests().some((r) => r.status === 429 && /\/contacts\/delta/.test(r.path))).toBe(true);
    expect(await run()).toEqual([]);
  });
});
