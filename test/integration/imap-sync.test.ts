import type { ImapFlow } from 'imapflow';
import { beforeAll, describe, expect, it } from 'vitest';
import { getSearchManifest } from '#shared/db/search';
import type { GrantId } from '#shared/ids';
import { useApi } from '../support/harness';
import { openImapClient, useDovecot } from '../support/dovecot';
import { createTestQueue, drainQueue, messagesIn } from '../support/queues';
import { jobsDone } from '../support/outbox-relay';
import { rememberSecret } from '../support/secrets';

/**
 * IMAP grants synced from a real Dovecot (shared/imap/sync.ts, run by shared/services/mail-sync.ts):
 * a first sync of several folders without message.created for history, then grant.imap_sync_completed;
 * changes made by another IMAP client (new mail, flags, expunges) as message.created / updated /
 * deleted exactly once; changes made through the API written to the server first; a UIDVALIDITY
 * reset reseeding silently; a run stopped mid-sync and the server restarted, resumed without
 * duplicates or loss; a password changed on the server → the grant invalid with grant.expired.
 */
const { api, applicationId } = useApi();
const PASSWORD = 'imap sync test password 7';
const dovecot = useDovecot([
  { user: 'sync@example.org', password: PASSWORD },
  { user: 'big@example.org', password: PASSWORD },
  { user: 'gone@example.org', password: PASSWORD },
]);

let fanout: string;
let syncQueue: string;
beforeAll(async () => {
  rememberSecret(PASSWORD, 'the IMAP sync test password');
  fanout = await createTestQueue('imap-sync-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
  syncQueue = await createTestQueue('imap-sync-runs');
  process.env.MAIL_SYNC_QUEUE_URL = syncQueue;
});

/** A client of the account, as another mail program (or the server's own delivery) would be. */
const imap = (user: string, password = PASSWORD): Promise<ImapFlow> => openImapClient(dovecot, user, password);

let serial = 0;
function mime(options: {
  subject: string;
  from?: string;
  to?: string;
  messageId?: string;
  inReplyTo?: string;
  date?: Date;
  body?: string;
}): Buffer {
  const id = options.messageId ?? `<m${++serial}.${Date.now()}@example.net>`;
  return Buffer.from(
    [
      `From: ${options.from ?? 'Carol <carol@example.net>'}`,
      `To: ${options.to ?? 'sync@example.org'}`,
      `Subject: ${options.subject}`,
      `Date: ${(options.date ?? new Date()).toUTCString()}`,
      `Message-ID: ${id}`,
      ...(options.inReplyTo ? [`In-Reply-To: ${options.inReplyTo}`, `References: ${options.inReplyTo}`] : []),
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=utf-8',
      '',
      options.body ?? `Body of ${options.subject}`,
      '',
    ].join('\r\n'),
  );
}

/** UIDs of the open folder's messages with this subject. */
async function uidsOf(client: ImapFlow, subject: string): Promise<number[]> {
  return (await client.search({ header: { subject } }, { uid: true })) || [];
}

async function connect(user: string) {
  const response = await api.post('/v3/connect/custom', {
    provider: 'imap',
    settings: {
      imap_username: user,
      imap_password: PASSWORD,
      imap_host: '127.0.0.1',
      imap_port: dovecot.imapPort,
      smtp_host: '127.0.0.1',
      smtp_port: dovecot.submissionPort,
    },
  });
  expect(response.status, response.text).toBe(201);
  await jobsDone();
  return response.body.data as { id: string; email: string };
}

/** One sync run of the grant now, as the mail-sync worker runs it (a request to sync: no `due`). */
async function syncRun(grantId: string, remainingMs: () => number = () => 300_000) {
  const { runMailSync } = await import('#shared/services/mail-sync');
  await runMailSync({ application_id: applicationId(), grant_id: grantId }, remainingMs);
  await jobsDone();
}

/** Notifications published for the grant since the last call (the fan-out queue drained). */
async function notifications(grantId: string) {
  await jobsDone();
  const all = await drainQueue(fanout, await messagesIn(fanout), 10_000);
  return all
    .map((m) => m.body as { type: string; data: { grant_id: string; object: Record<string, unknown> } })
    .filter((n) => n.data.grant_id === grantId);
}

async function allMessages(grantId: string, query = '') {
  const found: {
    id: string;
    folders: string[];
    subject: string;
    unread: boolean;
    starred: boolean;
    thread_id: string;
  }[] = [];
  let token: string | undefined;
  do {
    const response = await api.get(
      `/v3/grants/${grantId}/messages?limit=200${query}${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
    );
    expect(response.status, response.text).toBe(200);
    found.push(...response.body.data);
    token = response.body.next_cursor;
  } while (token);
  return found;
}

describe('IMAP sync', () => {
  let grant: { id: string; email: string };
  const threadRoot = '<root.thread@example.net>';

  it('syncs every folder once, quietly, then announces grant.imap_sync_completed', async () => {
    const client = await imap('sync@example.org');
    try {
      await client.mailboxCreate('Projects');
      await client.mailboxCreate(['Projects', '2026']);
      for (let i = 0; i < 30; i++)
        await client.append(
          'INBOX',
          mime({ subject: `Inbox ${i}`, date: new Date(Date.now() - (30 - i) * 3600_000) }),
          i % 3 ? ['\\Seen'] : [],
        );
      await client.append('INBOX', mime({ subject: 'Plan', messageId: threadRoot }));
      await client.append('INBOX', mime({ subject: 'Re: Plan', inReplyTo: threadRoot }));
      for (let i = 0; i < 8; i++)
        await client.append('Projects/2026', mime({ subject: `Project ${i}` }), ['\\Flagged']);
      for (let i = 0; i < 4; i++)
        await client.append(
          'Sent',
          mime({
            subject: `Sent ${i}`,
            from: 'sync@example.org',
            to: 'dan@example.net',
            ...(i === 0 ? { messageId: '<sent-root@example.org>' } : {}),
          }),
          ['\\Seen'],
        );
      // A reply in the inbox to a message in Sent: the inbox is synced first, so the reply is stored before its parent.
      await client.append(
        'INBOX',
        mime({ subject: 'Re: Sent 0', from: 'Dan <dan@example.net>', inReplyTo: '<sent-root@example.org>' }),
      );
      // One message in two folders: one message, both folders.
      const shared = mime({ subject: 'In two places', messageId: '<twice@example.net>' });
      await client.append('INBOX', shared);
      await client.append('Archive', shared);
      // Outside the sync window (three months): not synced.
      await client.append('INBOX', mime({ subject: 'Ancient' }), [], new Date(Date.now() - 200 * 86400_000));
    } finally {
      await client.logout();
    }
    grant = await connect('sync@example.org');
    await syncRun(grant.id);

    const messages = await allMessages(grant.id);
    expect(messages.filter((m) => m.folders.includes('inbox'))).toHaveLength(34);
    expect(messages.find((m) => m.subject === 'Ancient')).toBeUndefined();
    expect(messages.find((m) => m.subject === 'In two places')!.folders.sort()).toEqual(['archive', 'inbox']);
    expect(messages.find((m) => m.subject === 'Inbox 1')).toMatchObject({ unread: false, starred: false });
    expect(messages.find((m) => m.subject === 'Inbox 0')).toMatchObject({ unread: true });
    expect(messages.filter((m) => m.folders.includes('sent'))).toHaveLength(4);
    const plan = messages.find((m) => m.subject === 'Plan')!;
    expect(messages.find((m) => m.subject === 'Re: Plan')!.thread_id).toBe(plan.thread_id);
    // The parent synced after its reply joins the reply's thread.
    expect(messages.find((m) => m.subject === 'Sent 0')!.thread_id).toBe(
      messages.find((m) => m.subject === 'Re: Sent 0')!.thread_id,
    );

    const folders = (await api.get(`/v3/grants/${grant.id}/folders`)).body.data as {
      id: string;
      name: string;
      parent_id?: string;
      total_count: number;
      unread_count: number;
    }[];
    const projects = folders.find((f) => f.name === 'Projects')!;
    const year = folders.find((f) => f.name === '2026')!;
    expect(year).toMatchObject({ parent_id: projects.id, total_count: 8, unread_count: 8 });
    expect(folders.find((f) => f.id === 'inbox')).toMatchObject({ total_count: 34 });
    const inProject = await allMessages(grant.id, `&in=${year.id}&starred=true`);
    expect(inProject).toHaveLength(8);

    // History is not news: no message.created; the first full sync is announced once.
    const published = await notifications(grant.id);
    expect(published.filter((n) => n.type.startsWith('message.'))).toEqual([]);
    expect(published.filter((n) => n.type === 'grant.imap_sync_completed')).toHaveLength(1);
    expect(published.find((n) => n.type === 'grant.imap_sync_completed')!.data.object).toMatchObject({
      grant_id: grant.id,
      messages: 47,
    });
    // An import's batches merge their search entries in large steps; the sync's end merged the rest.
    const manifest = await getSearchManifest(grant.id as GrantId);
    expect(Object.values(manifest.segments).reduce((docs, segment) => docs + segment.docs, 0)).toBe(messages.length);

    // A run with nothing new changes nothing and says nothing.
    await syncRun(grant.id);
    expect(await notifications(grant.id)).toEqual([]);
    expect(await allMessages(grant.id)).toHaveLength(messages.length);
  });

  it('queries the server directly with query_imap: older mail, `in` required, found again by ID', async () => {
    const missingIn = await api.get(`/v3/grants/${grant.id}/messages?query_imap=true&subject=Ancient`);
    expect(missingIn.status).toBe(400);
    expect(missingIn.body.error.message).toMatch(/'in'/);
    const threadFilter = await api.get(
      `/v3/grants/${grant.id}/messages?query_imap=true&in=inbox&thread_id=thr_01jd6abcdefghjkmnpqrstvwxy`,
    );
    expect(threadFilter.status).toBe(400);

    const found = await api.get(`/v3/grants/${grant.id}/messages?query_imap=true&in=inbox&subject=Ancient`);
    expect(found.status, found.text).toBe(200);
    expect(found.body.data).toHaveLength(1);
    const [ancient] = found.body.data;
    expect(ancient).toMatchObject({
      subject: 'Ancient',
      folders: ['inbox'],
      body: expect.stringContaining('Body of Ancient'),
    });
    // Not synced (older than three months): only query_imap reaches it.
    expect((await api.get(`/v3/grants/${grant.id}/messages/${ancient.id}`)).status).toBe(404);
    const again = await api.get(`/v3/grants/${grant.id}/messages/${ancient.id}?query_imap=true`);
    expect(again.status, again.text).toBe(200);
    expect(again.body.data).toMatchObject({ id: ancient.id, subject: 'Ancient' });

    // Newest first (by UID: the order messages reached the folder), paged; synced messages keep their IDs.
    const page = await api.get(`/v3/grants/${grant.id}/messages?query_imap=true&in=inbox&limit=5`);
    expect(page.body.data).toHaveLength(5);
    expect(page.body.next_cursor).toEqual(expect.any(String));
    const next = await api.get(
      `/v3/grants/${grant.id}/messages?query_imap=true&in=inbox&limit=5&page_token=${encodeURIComponent(page.body.next_cursor)}`,
    );
    expect(next.body.data).toHaveLength(5);
    const synced = await allMessages(grant.id, '&in=inbox');
    for (const m of [...page.body.data, ...next.body.data])
      if (m.subject !== 'Ancient') expect(synced.map((s) => s.id)).toContain(m.id);
    expect(
      (await api.get(`/v3/grants/${grant.id}/messages?query_imap=true&in=inbox&unread=true&limit=50`)).body.data.every(
        (m: { unread: boolean }) => m.unread,
      ),
    ).toBe(true);
  });

  it('announces what another IMAP client changed, once each: new mail, flags, expunges, moves', async () => {
    const before = await allMessages(grant.id);
    const client = await imap('sync@example.org');
    try {
      await client.mailboxOpen('INBOX');
      await client.append('INBOX', mime({ subject: 'Fresh news' }));
      const [first] = await uidsOf(client, 'Inbox 0');
      await client.messageFlagsAdd(String(first), ['\\Seen'], { uid: true });
      const [doomed] = await uidsOf(client, 'Inbox 5');
      await client.messageDelete(String(doomed), { uid: true });
      const [moving] = await uidsOf(client, 'Inbox 7');
      await client.messageMove(String(moving), 'Projects', { uid: true });
    } finally {
      await client.logout();
    }
    await syncRun(grant.id);
    const published = await notifications(grant.id);
    const ofType = (type: string) => published.filter((n) => n.type === type);
    expect(ofType('message.created').map((n) => n.data.object.subject)).toEqual(['Fresh news']);
    expect(ofType('message.deleted').map((n) => n.data.object.id)).toEqual([
      before.find((m) => m.subject === 'Inbox 5')!.id,
    ]);
    const updated = ofType('message.updated').map(
      (n) => n.data.object as { id: string; subject: string; unread: boolean; folders: string[] },
    );
    expect(updated.find((u) => u.subject === 'Inbox 0')).toMatchObject({ unread: false });
    const moved = updated.filter((u) => u.subject === 'Inbox 7');
    expect(moved.at(-1)!.folders).toEqual([expect.stringMatching(/^fld_/)]);
    expect(moved.at(-1)!.id).toBe(before.find((m) => m.subject === 'Inbox 7')!.id);

    const after = await allMessages(grant.id);
    expect(after).toHaveLength(before.length);
    expect(after.find((m) => m.subject === 'Inbox 5')).toBeUndefined();

    await syncRun(grant.id);
    expect(await notifications(grant.id)).toEqual([]);
  });

  it('writes changes made through the API to the server first, and the next sync reports nothing more', async () => {
    const messages = await allMessages(grant.id);
    const target = messages.find((m) => m.subject === 'Inbox 3')!;
    const read = await api.put(`/v3/grants/${grant.id}/messages/${target.id}`, { unread: true, starred: true });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data).toMatchObject({ unread: true, starred: true });
    const folders = (await api.get(`/v3/grants/${grant.id}/folders`)).body.data as { id: string; name: string }[];
    const projects = folders.find((f) => f.name === 'Projects')!;
    const moved = await api.put(`/v3/grants/${grant.id}/messages/${target.id}`, { folders: [projects.id] });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data.folders).toEqual([projects.id]);

    const client = await imap('sync@example.org');
    try {
      await client.mailboxOpen('Projects');
      const [uid] = await uidsOf(client, 'Inbox 3');
      const onServer = await client.fetchOne(String(uid), { flags: true }, { uid: true });
      expect(onServer && [...onServer.flags!].filter((f) => f !== '\\Recent')).toEqual(['\\Flagged']);
      await client.mailboxOpen('INBOX');
      expect(await uidsOf(client, 'Inbox 3')).toEqual([]);
    } finally {
      await client.logout();
    }
    const published = await notifications(grant.id);
    expect(published.map((n) => n.type)).toEqual(['message.updated', 'message.updated']);
    await syncRun(grant.id);
    expect(await notifications(grant.id)).toEqual([]);

    // Deleted through the API (hard): gone from the server and the store.
    const gone = messages.find((m) => m.subject === 'Inbox 4')!;
    const deleted = await api.delete(`/v3/grants/${grant.id}/messages/${gone.id}?hard_delete=true`);
    expect(deleted.status, deleted.text).toBe(200);
    expect((await api.get(`/v3/grants/${grant.id}/messages/${gone.id}`)).status).toBe(404);
    await syncRun(grant.id);
    expect((await notifications(grant.id)).map((n) => n.type)).toEqual(['message.deleted']);
  });

  it('reseeds a folder whose UIDVALIDITY changed without announcing its messages again', async () => {
    const before = await allMessages(grant.id, '&in=sent');
    expect(before).toHaveLength(4);
    const client = await imap('sync@example.org');
    try {
      // Recreated: the same messages under new UIDs and a new UIDVALIDITY, one of them left out.
      const sources: Buffer[] = [];
      await client.mailboxOpen('Sent');
      for await (const message of client.fetch('1:*', { source: true })) sources.push(message.source!);
      await client.mailboxClose();
      await client.mailboxDelete('Sent');
      await client.mailboxCreate('Sent');
      for (const source of sources.slice(1)) await client.append('Sent', source, ['\\Seen']);
    } finally {
      await client.logout();
    }
    await syncRun(grant.id);
    const after = await allMessages(grant.id, '&in=sent');
    expect(after.map((m) => m.id).sort()).toEqual(
      before
        .map((m) => m.id)
        .filter((id) => after.some((a) => a.id === id))
        .sort(),
    );
    expect(after).toHaveLength(3);
    const published = await notifications(grant.id);
    expect(published.filter((n) => n.type === 'message.created')).toEqual([]);
    expect(published.filter((n) => n.type === 'message.deleted')).toHaveLength(1);
  });

  it('syncs 1,000 messages in three folders, resuming a first sync stopped between batches across a server restart, without duplicates or loss', async () => {
    const client = await imap('big@example.org');
    try {
      await client.mailboxCreate('Lists');
      await client.mailboxCreate('Receipts');
      const folderOf = (i: number) => (i % 5 === 0 ? 'Lists' : i % 5 === 1 ? 'Receipts' : 'INBOX');
      for (let i = 0; i < 1000; i++)
        await client.append(folderOf(i), mime({ subject: `Bulk ${i}`, to: 'big@example.org' }));
    } finally {
      await client.logout();
    }
    const big = await connect('big@example.org');
    // Out of time after the first batch.
    let calls = 0;
    await syncRun(big.id, () => (++calls > 3 ? 1_000 : 300_000));
    const partial = await allMessages(big.id);
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.length).toBeLessThan(1000);
    await dovecot.server.restart();
    await syncRun(big.id);
    const all = await allMessages(big.id);
    expect(all).toHaveLength(1000);
    expect(new Set(all.map((m) => m.subject)).size).toBe(1000);
    const counts = (await api.get(`/v3/grants/${big.id}/folders`)).body.data as { name: string; total_count: number }[];
    expect(Object.fromEntries(counts.filter((f) => f.total_count).map((f) => [f.name, f.total_count]))).toEqual({
      Inbox: 600,
      Lists: 200,
      Receipts: 200,
    });
    const published = await notifications(big.id);
    expect(published.filter((n) => n.type === 'message.created')).toEqual([]);
    expect(published.filter((n) => n.type === 'grant.imap_sync_completed')).toHaveLength(1);
  }, 120_000);

  it('marks the grant invalid with grant.expired when the server refuses its password for good', async () => {
    const gone = await connect('gone@example.org');
    await syncRun(gone.id);
    await notifications(gone.id);
    await dovecot.server.addAccount('gone@example.org', 'a new password 9');
    // addAccount returns once Dovecot takes the new password; the grant's is refused from then on.
    await expect(imap('gone@example.org')).rejects.toMatchObject({ authenticationFailed: true });
    await syncRun(gone.id);
    const read = await api.get(`/v3/grants/${gone.id}`);
    expect(read.body.data.grant_status).toBe('invalid');
    expect((await notifications(gone.id)).map((n) => n.type)).toEqual(['grant.expired']);
  });

  it('backs off while the server is down (30 s, doubling), keeps the grant valid, and catches up once it is back', async () => {
    const { getSyncState } = await import('#shared/db/mail-sync');
    const { dynamo, TABLE_NAME } = await import('#shared/aws/dynamodb');
    const { grantKey } = await import('#shared/db/keys');
    const { UpdateCommand } = await import('@aws-sdk/lib-dynamodb');
    const setImapPort = (port: number) =>
      dynamo.send(
        new UpdateCommand({
          TableName: TABLE_NAME,
          Key: grantKey(applicationId() as never, grant.id as never),
          UpdateExpression: 'SET settings.imap_port = :p',
          ExpressionAttributeValues: { ':p': port },
        }),
      );
    // The server moves away (a port nothing listens on): as if it were down.
    await setImapPort(1);
    const before = Date.now();
    await syncRun(grant.id);
    let state = (await getSyncState(grant.id as never))!;
    expect(state).toMatchObject({ failures: 1, last_error: expect.stringMatching(/ECONNREFUSED|connect/) });
    expect(state.next_due! - before).toBeGreaterThanOrEqual(29_000);
    await syncRun(grant.id);
    state = (await getSyncState(grant.id as never))!;
    expect(state.failures).toBe(2);
    expect(state.next_due! - Date.now()).toBeGreaterThan(55_000);
    expect((await api.get(`/v3/grants/${grant.id}`)).body.data.grant_status).toBe('valid');

    await setImapPort(dovecot.imapPort);
    await syncRun(grant.id);
    state = (await getSyncState(grant.id as never))!;
    expect(state.failures).toBe(0);
    expect(state.last_error).toBeUndefined();
  });
});
