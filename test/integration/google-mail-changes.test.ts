import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { changesOf, gmailMailChanges } from '#shared/google/mail-changes';
import { googleClientOf } from '#shared/google/client';
import type { GrantRecord } from '#shared/db/grants';
import { createSyncState, getSyncState } from '#shared/db/mail-sync';
import type { Notification } from '#shared/notifications/notification';
import type { GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';
import { syncRun } from '../support/sync-run';

/**
 * Provider A's mail changes (shared/google/mail-changes.ts) against the local Google fake: Gmail's
 * history since the grant's cursor becomes message.created / updated / deleted, committed with the
 * cursor under the run's lease, as shared/services/mail-sync.ts runs it. Each run here takes the
 * lease, runs, and gives it back as the service does; what it committed is read back.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google mail changes'));
  await createSyncState(grant.id as GrantId, grant.application_id as never, clock.nowSeconds());
});

afterAll(async () => {
  await fake?.close();
});

/** One run, as the service makes it: the notifications it committed, in order. */
const run = () => syncRun(grant, gmailMailChanges);

const kinds = (notifications: Notification[]) =>
  notifications.map((n) => `${n.type} ${(n.data.object as { id: string }).id}`);
const mail = (subject: string) =>
  `From: ann@example.org\r\nTo: ${email}\r\nSubject: ${subject}\r\n\r\nBody of ${subject}`;

describe("provider A's mail changes", () => {
  it('takes the cursor on its first run and announces nothing that was there before', async () => {
    fake.deliver(email, mail('Old news'));
    expect(await run()).toEqual([]);
    expect((await getSyncState(grant.id as GrantId))?.gmail?.history_id).toBe(fake.historyIdOf(email));
  });

  it('announces new messages, label changes and deletions once, the cursor kept with them', async () => {
    const client = await googleClientOf(grant);
    const first = fake.deliver(email, mail('First'));
    const second = fake.deliver(email, mail('Second'));
    // Changed before anyone was told: announced once, as it is now.
    await client.call({
      api: 'gmail',
      method: 'POST',
      path: `/gmail/v1/users/me/messages/${second.id}/modify`,
      body: { addLabelIds: ['STARRED'] },
    });
    const created = await run();
    expect(kinds(created)).toEqual([`message.created ${first.id}`, `message.created ${second.id}`]);
    expect(created[1]!.data.object).toMatchObject({ subject: 'Second', starred: true, grant_id: grant.id });
    expect(await run()).toEqual([]);

    await client.call({
      api: 'gmail',
      method: 'POST',
      path: `/gmail/v1/users/me/messages/${first.id}/modify`,
      body: { removeLabelIds: ['UNREAD'] },
    });
    await client.call({ api: 'gmail', method: 'DELETE', path: `/gmail/v1/users/me/messages/${second.id}` });
    const gone = fake.deliver(email, mail('Gone before told'));
    await client.call({ api: 'gmail', method: 'DELETE', path: `/gmail/v1/users/me/messages/${gone.id}` });
    const changed = await run();
    expect(kinds(changed)).toEqual([`message.updated ${first.id}`, `message.deleted ${second.id}`]);
    expect(changed[0]!.data.object).toMatchObject({ unread: false });
    expect(changed[1]!.data.object).toEqual({ id: second.id, object: 'message', grant_id: grant.id });
    expect((await getSyncState(grant.id as GrantId))?.gmail?.history_id).toBe(fake.historyIdOf(email));
  });

  it('announces no draft', async () => {
    const client = await googleClientOf(grant);
    await client.call({
      api: 'gmail',
      method: 'POST',
      path: '/gmail/v1/users/me/drafts',
      body: { message: { raw: Buffer.from(mail('A draft')).toString('base64url') } },
    });
    expect(await run()).toEqual([]);
  });

  it('makes the same notifications, IDs included, from the same history read again', () => {
    const records = [
      { id: '10', messagesAdded: [{ message: { id: 'a1', labelIds: ['INBOX'] } }] },
      { id: '11', labelsAdded: [{ message: { id: 'a1', labelIds: ['INBOX', 'STARRED'] }, labelIds: ['STARRED'] }] },
      { id: '12', labelsRemoved: [{ message: { id: 'b2', labelIds: [] }, labelIds: ['UNREAD'] }] },
      { id: '13', messagesDeleted: [{ message: { id: 'c3' } }] },
      { id: '14', messagesAdded: [{ message: { id: 'd4', labelIds: ['DRAFT'] } }] },
    ];
    expect([...changesOf(records)]).toEqual([
      ['a1', { change: 'created', at: '10' }],
      ['b2', { change: 'updated', at: '12' }],
      ['c3', { change: 'deleted', at: '13' }],
    ]);
    expect([...changesOf(records)]).toEqual([...changesOf(records)]);
  });

  it('after an expired cursor, announces what arrived since the last change and takes a new cursor', async () => {
    const before = clock.nowSeconds();
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const late = fake.deliver(email, mail('While away'));
    fake.expireHistory(email);
    const recovered = await run();
    expect(kinds(recovered)).toContain(`message.created ${late.id}`);
    expect(recovered.every((n) => n.type === 'message.created')).toBe(true);
    expect((await getSyncState(grant.id as GrantId))?.gmail?.history_id).toBe(fake.historyIdOf(email));
    expect((await getSyncState(grant.id as GrantId))!.last_change_at).toBeGreaterThanOrEqual(before);
    expect(await run()).toEqual([]);
  });

  it('sent nothing Gmail does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});

describe("provider A's mail changes for a grant with Gmail's metadata scope only", () => {
  it('announces message.created.metadata without the body, and its messages answer without bodies and searches', async () => {
    const limited = await connectFakeGoogleGrant(fake, 'google metadata scope', {
      scope: ['https://www.googleapis.com/auth/gmail.metadata'],
    });
    await createSyncState(limited.grant.id as GrantId, limited.grant.application_id as never, clock.nowSeconds());
    const runOf = () => syncRun(limited.grant, gmailMailChanges);
    expect(await runOf()).toEqual([]);
    const delivered = fake.deliver(
      limited.email,
      `From: ann@example.org\r\nTo: ${limited.email}\r\nSubject: Metadata only\r\n\r\nSecret body`,
    );
    const notes = await runOf();
    expect(kinds(notes)).toEqual([`message.created.metadata ${delivered.id}`]);
    expect(notes[0]!.data.object).toMatchObject({ id: delivered.id, subject: 'Metadata only' });
    expect(JSON.stringify(notes[0]!.data.object)).not.toContain('Secret body');
    const { gmailMessages } = await import('#shared/google/messages');
    expect((await gmailMessages.get(limited.grant, delivered.id, {})).body).toBeUndefined();
    await expect(gmailMessages.list(limited.grant, { subject: 'Metadata' }, 10)).rejects.toThrow(/metadata scope only/);
    await expect(gmailMessages.get(limited.grant, delivered.id, { fields: 'raw_mime' })).rejects.toThrow(/raw_mime/);
    expect((await gmailMessages.list(limited.grant, { in: 'INBOX' }, 10)).items.map((m) => m.id)).toEqual([
      delivered.id,
    ]);
  });
});
