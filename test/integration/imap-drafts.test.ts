import { randomBytes } from 'node:crypto';
import { chmodSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ImapFlow } from 'imapflow';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GrantId } from '#shared/ids';
import { parseMime } from '#shared/mail/parse';
import { useApi } from '../support/harness';
import { connectImapGrant, useDovecot } from '../support/dovecot';
import { createTestQueue } from '../support/queues';
import { rememberSecret } from '../support/secrets';
import { grantNotifications, syncRun as runSync } from '../support/sync-runs';

/**
 * Drafts of an IMAP grant (shared/imap/drafts.ts, draft-send.ts) against a real Dovecot: each draft
 * is a record as an Agent Account's and a copy in the server's Drafts folder (\Draft), replaced on
 * update, deleted with the draft, and sent over the account's SMTP server into this file's sink (the
 * copy then in Sent, not in Drafts). A sync after each step stores no message for these copies and
 * announces none; a draft another client saves there is synced as a message in `drafts`. A server
 * that refuses answers 400 and the store keeps nothing.
 */
const { api, applicationId } = useApi();
const USER = 'drafts@example.org';
const PASSWORD = 'imap drafts test password 5';
const dovecot = useDovecot([{ user: USER, password: PASSWORD }]);

let fanout: string;
let grant: { id: string; email: string };

async function imap(): Promise<ImapFlow> {
  const client = new ImapFlow({
    host: '127.0.0.1',
    port: dovecot.imapPort,
    secure: false,
    auth: { user: USER, pass: PASSWORD },
    logger: false,
  });
  await client.connect();
  return client;
}

/** The copies in a server folder whose header matches, with their flags and MIME. */
async function onServer(path: string, header: { subject?: string; 'message-id'?: string }) {
  const client = await imap();
  try {
    await client.mailboxOpen(path, { readOnly: true });
    const uids = (await client.search({ header }, { uid: true })) || [];
    const found = [];
    for (const uid of uids) {
      const message = await client.fetchOne(String(uid), { flags: true, source: true }, { uid: true });
      if (message) found.push({ uid, flags: [...(message.flags ?? [])], source: message.source! });
    }
    return found;
  } finally {
    await client.logout();
  }
}

const syncRun = () => runSync(applicationId(), grant.id);

const notifications = () => grantNotifications(fanout, grant.id);

async function messagesInDrafts() {
  const response = await api.get(`/v3/grants/${grant.id}/messages?in=drafts&limit=200`);
  expect(response.status, response.text).toBe(200);
  return response.body.data as { id: string; subject: string; folders: string[] }[];
}

async function draftList(query = '') {
  const response = await api.get(`/v3/grants/${grant.id}/drafts?limit=200${query}`);
  expect(response.status, response.text).toBe(200);
  return response.body.data as { id: string; subject: string }[];
}

/** A sync run stores no message for the drafts' copies and announces nothing; the Drafts checkpoint counts what the server holds. */
async function syncFindsNothing() {
  await syncRun();
  expect(await notifications()).toEqual([]);
  expect(await messagesInDrafts()).toEqual([]);
  const { getSyncState } = await import('#shared/db/mail-sync');
  const state = await getSyncState(grant.id as GrantId);
  const client = await imap();
  try {
    const status = await client.status('Drafts', { messages: true });
    expect(state!.folders.drafts!.messages).toBe(status && status.messages);
  } finally {
    await client.logout();
  }
}

beforeAll(async () => {
  rememberSecret(PASSWORD, 'the IMAP drafts test password');
  fanout = await createTestQueue('imap-drafts-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
  process.env.MAIL_SYNC_QUEUE_URL = await createTestQueue('imap-drafts-sync');
  grant = await connectImapGrant(api, dovecot, USER, PASSWORD);
  await syncRun();
  await notifications();
});

describe('IMAP drafts', () => {
  let draftId: string;
  let header: string;

  it("creates a draft as a copy in the server's Drafts folder, flagged \\Draft, that the sync leaves alone", async () => {
    const created = await api.post(`/v3/grants/${grant.id}/drafts`, {
      to: [{ email: 'ann@example.net', name: 'Ann' }],
      subject: 'Plans',
      body: '<p>First thoughts</p>',
    });
    expect(created.status, created.text).toBe(200);
    expect(created.body.data).toMatchObject({
      object: 'draft',
      grant_id: grant.id,
      subject: 'Plans',
      folders: ['drafts'],
      from: [{ email: USER }],
    });
    draftId = created.body.data.id;
    expect(draftId).toMatch(/^drf_/);

    const [copy, ...more] = await onServer('Drafts', { subject: 'Plans' });
    expect(more).toEqual([]);
    expect(copy!.flags).toEqual(expect.arrayContaining(['\\Draft', '\\Seen']));
    const mail = await parseMime(copy!.source);
    header = mail.messageId!;
    expect(header).toBe(`<${draftId}@example.org>`);
    expect(mail.to).toEqual([{ email: 'ann@example.net', name: 'Ann' }]);
    expect(mail.html).toContain('First thoughts');

    expect(await notifications()).toEqual([]);
    await syncFindsNothing();
  });

  it('keeps an attachment in the copy, byte for byte', async () => {
    const content = randomBytes(30_000);
    const created = await api.post(`/v3/grants/${grant.id}/drafts`, {
      to: [{ email: 'bo@example.net' }],
      subject: 'With a file',
      body: 'see attached',
      is_plaintext: true,
      attachments: [
        { filename: 'data.bin', content_type: 'application/octet-stream', content: content.toString('base64') },
      ],
    });
    expect(created.status, created.text).toBe(200);
    expect(created.body.data.attachments).toMatchObject([{ filename: 'data.bin', size: content.length }]);
    const [copy] = await onServer('Drafts', { subject: 'With a file' });
    const mail = await parseMime(copy!.source);
    expect(mail.text?.trim()).toBe('see attached');
    expect(mail.attachments.map((a) => a.filename)).toEqual(['data.bin']);
    expect(mail.attachments[0]!.content.equals(content)).toBe(true);
    await syncFindsNothing();
    expect((await api.delete(`/v3/grants/${grant.id}/drafts/${created.body.data.id}`)).status).toBe(200);
  });

  it('replaces the copy on update: the server holds only the new version, under the same Message-ID', async () => {
    const updated = await api.put(`/v3/grants/${grant.id}/drafts/${draftId}`, {
      subject: 'Plans, revised',
      body: '<p>Second thoughts</p>',
      starred: true,
    });
    expect(updated.status, updated.text).toBe(200);
    expect(updated.body.data).toMatchObject({ id: draftId, subject: 'Plans, revised', starred: true });

    const copies = await onServer('Drafts', { 'message-id': header });
    expect(copies).toHaveLength(1);
    const mail = await parseMime(copies[0]!.source);
    expect(mail.subject).toBe('Plans, revised');
    expect(mail.html).toContain('Second thoughts');
    expect(await onServer('Drafts', { subject: 'Plans' })).toHaveLength(1);

    const got = await api.get(`/v3/grants/${grant.id}/drafts/${draftId}`);
    expect(got.status, got.text).toBe(200);
    expect(got.body.data).toMatchObject({ subject: 'Plans, revised', body: '<p>Second thoughts</p>' });
    expect((await draftList('&subject=revised')).map((d) => d.id)).toEqual([draftId]);
    expect((await draftList('&to=ann@example.net&starred=true')).map((d) => d.id)).toEqual([draftId]);
    await syncFindsNothing();
  });

  it('answers 400 for query_imap on the drafts list', async () => {
    const response = await api.get(`/v3/grants/${grant.id}/drafts?query_imap=true`);
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.message).toMatch(/query_imap.*drafts/);
  });

  it('deletes the copy with the draft', async () => {
    expect((await api.delete(`/v3/grants/${grant.id}/drafts/${draftId}`)).status).toBe(200);
    expect(await onServer('Drafts', { 'message-id': header })).toEqual([]);
    expect((await api.get(`/v3/grants/${grant.id}/drafts/${draftId}`)).status).toBe(404);
    expect(await draftList()).toEqual([]);
    await syncFindsNothing();
  });

  it("sends a draft over the account's SMTP server: in Sent, gone from Drafts and from the drafts list", async () => {
    const created = await api.post(`/v3/grants/${grant.id}/drafts`, {
      to: [{ email: 'cy@example.net' }],
      subject: 'Ready to go',
      body: '<p>Sent from a draft</p>',
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.data.id as string;
    expect(await onServer('Drafts', { subject: 'Ready to go' })).toHaveLength(1);

    const sent = await api.post(`/v3/grants/${grant.id}/drafts/${id}`, {});
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.data).toMatchObject({
      object: 'message',
      folders: ['sent'],
      subject: 'Ready to go',
      unread: false,
    });
    expect((await dovecot.sink.waitFor('cy@example.net')).map((m) => m.subject)).toEqual(['Ready to go']);
    const [inSent] = await onServer('Sent', { subject: 'Ready to go' });
    expect((await parseMime(inSent!.source)).messageId).not.toBe(`<${id}@example.org>`);
    expect(await onServer('Drafts', { subject: 'Ready to go' })).toEqual([]);
    expect(await draftList()).toEqual([]);
    expect((await api.get(`/v3/grants/${grant.id}/drafts/${id}`)).status).toBe(404);
    expect((await notifications()).map((n) => [n.type, n.data.object.id])).toEqual([
      ['message.created', sent.body.data.id],
    ]);
    await syncFindsNothing();
  });

  it('syncs a draft another client saves in Drafts as a message in folder drafts', async () => {
    const client = await imap();
    try {
      const raw = [
        'From: drafts@example.org',
        'To: dee@example.net',
        'Subject: Written elsewhere',
        `Date: ${new Date().toUTCString()}`,
        'Message-ID: <elsewhere.1@example.org>',
        '',
        'Half a thought',
        '',
      ].join('\r\n');
      await client.append('Drafts', Buffer.from(raw), ['\\Draft', '\\Seen']);
    } finally {
      await client.logout();
    }
    await syncRun();
    expect((await messagesInDrafts()).map((m) => [m.subject, m.folders])).toEqual([['Written elsewhere', ['drafts']]]);
    expect((await notifications()).map((n) => [n.type, n.data.object.subject])).toEqual([
      ['message.created', 'Written elsewhere'],
    ]);
    expect(await draftList()).toEqual([]);
  });

  it('answers 400 naming the server when it refuses the copy, and changes nothing in the store', async () => {
    const kept = await api.post(`/v3/grants/${grant.id}/drafts`, {
      to: [{ email: 'eve@example.net' }],
      subject: 'Kept as it is',
      body: 'x',
    });
    expect(kept.status, kept.text).toBe(200);
    // The Drafts folder can no longer take a message (its maildir's tmp/ is not writable by the mail processes).
    const tmp = join(dovecot.server.dir, 'home', USER, 'Maildir', '.Drafts', 'tmp');
    const mode = statSync(tmp).mode;
    chmodSync(tmp, 0o555);
    try {
      const refused = await api.post(`/v3/grants/${grant.id}/drafts`, {
        to: [{ email: 'eve@example.net' }],
        subject: 'Nowhere to go',
        body: 'x',
      });
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body.error.message).toMatch(/^The IMAP server refused to save the draft in 'Drafts': /);
      const unchanged = await api.put(`/v3/grants/${grant.id}/drafts/${kept.body.data.id}`, { subject: 'Changed' });
      expect(unchanged.status, unchanged.text).toBe(400);
    } finally {
      chmodSync(tmp, mode);
    }
    expect((await draftList()).map((d) => d.subject)).toEqual(['Kept as it is']);
    expect(await onServer('Drafts', { subject: 'Nowhere to go' })).toEqual([]);
    expect((await onServer('Drafts', { subject: 'Kept as it is' })).map((c) => c.flags)).toEqual([
      expect.arrayContaining(['\\Draft']),
    ]);
    expect(await notifications()).toEqual([]);
  });
});
