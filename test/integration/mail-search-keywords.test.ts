import { randomBytes } from 'node:crypto';
import { ImapFlow } from 'imapflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bodyKey } from '#shared/mailbox/blobs';
import { participantText, messagePostings, tokens } from '#shared/mailbox/postings';
import { mergeSearchIndex } from '#shared/mailbox/search-index';
import { folderDeltas, storeMessage } from '#shared/mailbox/store';
import type { MessageRecord } from '#shared/mailbox/types';
import { putBlob } from '#shared/aws/mail-bucket';
import type { GrantRecord } from '#shared/db/grants';
import { insertMessage } from '#shared/db/messages';
import { COMMIT_MARGIN_MS, getSearchManifest, readSearchEntries } from '#shared/db/search';
import { newId } from '#shared/ids';
import { clock } from '#shared/time';
import { apiClient, type ApiClient } from '../support/api';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { inboundMail, storedMailbox } from '../support/stored-mail';
import { useDovecot } from '../support/dovecot';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue } from '../support/queues';
import { rememberSecret } from '../support/secrets';
import { syncRun } from '../support/sync-runs';

/**
 * Text filters match whole keywords, one character included (shared/mailbox/text.ts): `subject=Invoice 7`
 * finds "Invoice 7", not every invoice. In an Agent Account (from the unmerged entries and from the
 * segments), in an IMAP grant (synced into the same stored mailbox), and for messages indexed before
 * one-character words were (format 1: their entries hold none), whose one-character words are decided
 * on the message itself (shared/mailbox/search-index.ts).
 */
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
const PASSWORD = 'search keywords test password 5';
const dovecot = useDovecot([{ user: 'keywords@example.org', password: PASSWORD }]);

beforeAll(async () => {
  rememberSecret(PASSWORD, 'the search keywords test password');
  process.env.FANOUT_QUEUE_URL = await createTestQueue('keywords-fanout');
  process.env.MAIL_SYNC_QUEUE_URL = await createTestQueue('keywords-sync');
  gateway = await startGateway();
  const app = await makeApplication('search keywords');
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
});

afterAll(async () => {
  await gateway?.close();
});

const mailbox = () => storedMailbox(api, applicationId);

/** Subjects of the messages a list answers, sorted (the order is not what these tests are about). */
async function subjects(grantId: string, query: Record<string, string>, path = 'messages'): Promise<string[]> {
  const response = await api.get(`/v3/grants/${grantId}/${path}?limit=200&${new URLSearchParams(query)}`);
  expect(response.status, response.text).toBe(200);
  return (response.body.data as { subject: string }[]).map((m) => m.subject).sort();
}

/**
 * Runs a merge now, then one a commit margin later, so that the segments alone answer (no entry
 * above the watermark but one: the message "Unrelated" stored meanwhile).
 */
async function mergeBeyondEntries(grant: GrantRecord): Promise<void> {
  await jobsDone();
  await mergeSearchIndex(grant.id, { wait: true });
  const restore = clock.set(() => Date.now() + COMMIT_MARGIN_MS + 60_000);
  try {
    await storeMessage(inboundMail(grant, 'Unrelated', 'nothing here'));
    await jobsDone();
    await mergeSearchIndex(grant.id, { wait: true });
  } finally {
    restore();
  }
  const manifest = await getSearchManifest(grant.id);
  expect(Object.keys(manifest.segments).length).toBeGreaterThan(0);
  expect((await readSearchEntries(grant.id, manifest.watermark)).length).toBeLessThanOrEqual(1);
}

describe('Agent Account: one-character keywords', () => {
  it('finds "Invoice 7" by subject and full text, not every invoice; from its entry, then from its segment', async () => {
    // Prepare
    const grant = await mailbox();
    const tag = `tag${randomBytes(4).toString('hex')}`;
    for (const subject of ['Invoice 7', 'Invoice 8', 'Invoice 17'])
      await storeMessage(inboundMail(grant, subject, `Amount due for ${subject.toLowerCase()}`));
    for (let i = 0; i < 12; i++)
      await storeMessage(inboundMail(grant, `Inbox ${tag} #${i}`, `Notice ${i} of the series`));
    await storeMessage(inboundMail(grant, 'Table of results', 'See table 4 b for the figures'));
    await storeMessage(inboundMail(grant, 'Table of contents', 'See table 44 for the figures'));
    const check = async () => {
      // Act and assess
      expect(await subjects(grant.id, { subject: 'Invoice 7' })).toEqual(['Invoice 7']);
      expect(await subjects(grant.id, { subject: 'invoice' })).toEqual(['Invoice 17', 'Invoice 7', 'Invoice 8']);
      expect(await subjects(grant.id, { subject: `inbox ${tag} #7` })).toEqual([`Inbox ${tag} #7`]);
      expect(await subjects(grant.id, { subject: '7' })).toEqual([`Inbox ${tag} #7`, 'Invoice 7']);
      expect(await subjects(grant.id, { search_query_native: 'invoice 7' })).toEqual(['Invoice 7']);
      expect(await subjects(grant.id, { search_query_native: `${tag} 7` })).toEqual([`Inbox ${tag} #7`]);
      expect(await subjects(grant.id, { search_query_native: 'invoice -7' })).toEqual(['Invoice 17', 'Invoice 8']);
      expect(await subjects(grant.id, { search_query_native: 'table 4' })).toEqual(['Table of results']);
      expect(await subjects(grant.id, { search_query_native: 'figures b' })).toEqual(['Table of results']);
      expect(await subjects(grant.id, { search_query_native: 'subject:7 notice' })).toEqual([`Inbox ${tag} #7`]);
      const inboxWithoutSeven = (
        await subjects(grant.id, { search_query_native: 'in:inbox -7 -invoice -table' })
      ).filter((s) => s !== 'Unrelated');
      expect(inboxWithoutSeven).toEqual(
        Array.from({ length: 12 }, (_, i) => `Inbox ${tag} #${i}`)
          .filter((s) => !s.endsWith('#7'))
          .sort(),
      );
      expect(await subjects(grant.id, { search_query_native: 'table 5' })).toEqual([]);
    };
    await check();

    // Act: merged into segments that alone answer.
    await mergeBeyondEntries(grant);

    // Assess
    await check();
  }, 120_000);

  it('refuses a filter with no word at all, and accepts one of a single character', async () => {
    const grant = await mailbox();
    await storeMessage(inboundMail(grant, 'A b c', 'x'));
    for (const query of ['subject=%23', 'search_query_native=%23%20-', 'search_query_native=-x']) {
      const response = await api.get(`/v3/grants/${grant.id}/messages?${query}`);
      expect(response.status, query).toBe(400);
    }
    expect(await subjects(grant.id, { subject: 'b' })).toEqual(['A b c']);
    expect(await subjects(grant.id, { search_query_native: 'x' })).toEqual(['A b c']);
  });
});

/** Words as the index held them before one-character words (format 1): 2 to 64 letters or digits, distinct. */
const format1Words = (text: string) =>
  [
    ...new Set(
      text
        .toLowerCase()
        .normalize('NFC')
        .match(/[\p{L}\p{N}]+/gu) ?? [],
    ),
  ].filter((w) => w.length >= 2 && w.length <= 64);

/**
 * Stores a message as the versions before one-character words did: the same item, postings and
 * transaction (the storage module's own insert), with a search entry of format 1: no FORMAT_TOKEN
 * and no word of one character. With `bodyInS3`, its body is an S3 object, as large bodies are.
 */
async function storeFormat1(
  grant: GrantRecord,
  subject: string,
  body: string,
  options: { bodyInS3?: boolean } = {},
): Promise<MessageRecord> {
  const id = newId('message');
  const now = clock.nowSeconds();
  const key = bodyKey(grant.id, id);
  if (options.bodyInS3) await putBlob(key, Buffer.from(body), 'text/plain; charset=utf-8');
  const record: MessageRecord = {
    id,
    grant_id: grant.id,
    thread_id: newId('thread'),
    subject,
    from: [{ email: 'ann@example.net', name: 'Ann' }],
    to: [{ email: grant.email }],
    cc: [],
    bcc: [],
    reply_to: [],
    date: now,
    unread: true,
    starred: false,
    folders: ['inbox'],
    snippet: body.slice(0, 200),
    ...(options.bodyInS3 ? { body_key: key } : { body }),
    body_size: Buffer.byteLength(body),
    is_plaintext: true,
    attachments: [],
    metadata: {},
    references: [],
    created_at: now,
    updated_at: now,
    version: 1,
    search: 1,
  };
  const addresses = (['from', 'to'] as const).flatMap((field) =>
    record[field].flatMap((p) => [tokens.address(field, p.email), tokens.address('any', p.email)]),
  );
  const format1 = [
    ...new Set([
      ...addresses,
      ...format1Words(subject).map(tokens.subject),
      ...format1Words(`${subject} ${participantText(record)} ${body}`).map(tokens.text),
    ]),
  ];
  await insertMessage({
    message: record,
    applicationId: grant.application_id,
    postings: { postings: messagePostings(record), search: format1 },
    deltas: folderDeltas(record, 1),
  });
  return record;
}

describe('messages indexed before one-character words (format 1)', () => {
  it('decides their one-character words on the message itself: none wrongly excluded or included', async () => {
    // Prepare: format-1 messages (two with their body in S3) beside messages stored today.
    const grant = await mailbox();
    const old7 = await storeFormat1(grant, 'Invoice 7', 'Amount due for invoice 7');
    await storeFormat1(grant, 'Invoice 8', 'Amount due for invoice 8');
    await storeFormat1(grant, 'Invoice 17', 'Amount due for invoice 17');
    await storeFormat1(grant, 'Minutes', 'Decisions are on page 3 of the notes', { bodyInS3: true });
    await storeFormat1(grant, 'Agenda', 'Items are on page 33 of the notes', { bodyInS3: true });
    await storeMessage(inboundMail(grant, 'Invoice 7 reminder', 'Amount still due for invoice 7'));
    await storeMessage(inboundMail(grant, 'Invoice 9', 'Amount due for invoice 9'));
    await jobsDone();
    // Their entries are format 1 indeed: no word of one character.
    const entry = (await readSearchEntries(grant.id, '')).find((e) => e.messageId === old7.id)!;
    expect(entry.tokens).toContain('s:invoice');
    expect(entry.tokens.filter((t) => /^[ts]:.$/u.test(t) || t.startsWith('format:'))).toEqual([]);

    const check = async () => {
      // Act and assess: the index drives (subject, full text)...
      expect(await subjects(grant.id, { subject: 'Invoice 7' })).toEqual(['Invoice 7', 'Invoice 7 reminder']);
      expect(await subjects(grant.id, { subject: '7' })).toEqual(['Invoice 7', 'Invoice 7 reminder']);
      expect(await subjects(grant.id, { subject: 'invoice' })).toEqual([
        'Invoice 17',
        'Invoice 7',
        'Invoice 7 reminder',
        'Invoice 8',
        'Invoice 9',
      ]);
      expect(await subjects(grant.id, { search_query_native: 'invoice 7' })).toEqual([
        'Invoice 7',
        'Invoice 7 reminder',
      ]);
      expect(await subjects(grant.id, { search_query_native: 'invoice -7' })).toEqual([
        'Invoice 17',
        'Invoice 8',
        'Invoice 9',
      ]);
      expect(await subjects(grant.id, { search_query_native: 'page 3' })).toEqual(['Minutes']);
      expect(await subjects(grant.id, { search_query_native: 'notes -3' })).toEqual(['Agenda']);
      expect(await subjects(grant.id, { search_query_native: '3' })).toEqual(['Minutes']);
      // ...or checks candidates of a posting partition (folder, thread).
      const withoutSeven = (await subjects(grant.id, { search_query_native: 'in:inbox -7' })).filter(
        (s) => s !== 'Unrelated',
      );
      expect(withoutSeven).toEqual(['Agenda', 'Invoice 17', 'Invoice 8', 'Invoice 9', 'Minutes']);
      expect(await subjects(grant.id, { thread_id: old7.thread_id, subject: '7' })).toEqual(['Invoice 7']);
      expect(await subjects(grant.id, { thread_id: old7.thread_id, subject: '8' })).toEqual([]);
      // Thread lists read only IDs first: the body is read for the words that need it.
      expect(await subjects(grant.id, { search_query_native: 'page 3' }, 'threads')).toEqual(['Minutes']);
      expect(await subjects(grant.id, { subject: 'Invoice 8' }, 'threads')).toEqual(['Invoice 8']);
    };
    await check();

    // Act: merged into segments that alone answer (format-1 and format-2 documents in one segment).
    await mergeBeyondEntries(grant);

    // Assess
    await check();
  }, 120_000);
});

describe('IMAP grant: one-character keywords', () => {
  it('finds "#7" among the messages synced from the server, not every message of the tag', async () => {
    // Prepare: 30 messages "Inbox <tag> #<n>" on the server, synced.
    const tag = `tag${randomBytes(4).toString('hex')}`;
    const client = new ImapFlow({
      host: '127.0.0.1',
      port: dovecot.imapPort,
      secure: false,
      auth: { user: 'keywords@example.org', pass: PASSWORD },
      logger: false,
    });
    await client.connect();
    try {
      for (let i = 0; i < 30; i++) {
        const mime = [
          'From: Carol <carol@example.net>',
          'To: keywords@example.org',
          `Subject: Inbox ${tag} #${i}`,
          `Date: ${new Date(Date.now() - (30 - i) * 60_000).toUTCString()}`,
          `Message-ID: <k${i}.${tag}@example.net>`,
          'Content-Type: text/plain; charset=utf-8',
          '',
          `Item ${i} of the list`,
          '',
        ].join('\r\n');
        await client.append('INBOX', Buffer.from(mime));
      }
    } finally {
      await client.logout();
    }
    const response = await api.post('/v3/connect/custom', {
      provider: 'imap',
      settings: {
        imap_username: 'keywords@example.org',
        imap_password: PASSWORD,
        imap_host: '127.0.0.1',
        imap_port: dovecot.imapPort,
        smtp_host: '127.0.0.1',
        smtp_port: dovecot.submissionPort,
      },
    });
    expect(response.status, response.text).toBe(201);
    const grantId = (response.body.data as { id: string }).id;
    await jobsDone();

    // Act
    await syncRun(applicationId, grantId);

    // Assess
    expect(await subjects(grantId, { subject: `inbox ${tag}` })).toHaveLength(30);
    expect(await subjects(grantId, { subject: `inbox ${tag} #7` })).toEqual([`Inbox ${tag} #7`]);
    expect(await subjects(grantId, { search_query_native: `${tag} 7` })).toEqual([`Inbox ${tag} #7`]);
    expect(await subjects(grantId, { search_query_native: `item 1 -${tag}` })).toEqual([]);
    expect(await subjects(grantId, { search_query_native: `item 2 ${tag}` })).toEqual([`Inbox ${tag} #2`]);
  }, 120_000);
});
