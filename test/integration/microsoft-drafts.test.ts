import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { DraftObject, MessageObject } from '#schemas/mail';
import { graphDrafts, graphDraftSending } from '#shared/microsoft/drafts';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import type { Draft } from '#shared/providers/contract';
import { uniqueEmail } from '../support/factories';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';

/**
 * Provider B's drafts, live (shared/microsoft/drafts.ts), against the local Graph fake: Outlook's
 * drafts (messages in Drafts, their Graph IDs ours) composed as every outgoing message is, changed
 * field by field with their attachments kept or replaced, a large attachment by upload session, a
 * reply draft through createReply, listed with filters and pages, sent with Graph's send.
 */
let fake: GraphFake;
let grant: GrantRecord;
let email: string;
const bob = uniqueEmail('bob');

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);
const validDraft = ajv.compile(DraftObject);
const validMessage = ajv.compile(MessageObject);

beforeAll(async () => {
  fake = await startGraphFake();
  ({ grant, email } = await connectFakeMicrosoftGrant(fake, 'microsoft drafts'));
  fake.addUser({ email: bob, accessToken: `token-of-${bob}` });
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

const file = (name: string, content: Buffer | string, type = 'text/plain') => ({
  filename: name,
  content_type: type,
  content: Buffer.from(content).toString('base64'),
});

const sizes = (draft: Draft) => draft.attachments.map((a) => [a.filename, a.size]);

const callsSince = (since: number) =>
  fake
    .requests()
    .slice(since)
    .map((r) => `${r.method} ${r.path.replace(/\?.*/, '')} ${r.status}`);

describe("provider B's drafts, live", () => {
  it('creates a draft without recipients, changes it field by field, its attachment kept, then replaced', async () => {
    // Act
    const draft = await graphDrafts.create(
      grant,
      {
        subject: 'Ideas',
        body: 'First thoughts',
        is_plaintext: true,
        attachments: [file('a.txt', 'A')],
        metadata: { key1: 'x' },
      },
      [],
    );
    const changed = await graphDrafts.update(grant, draft.id, { to: [{ email: bob }], body: 'Second thoughts' }, []);
    const replaced = await graphDrafts.update(
      grant,
      draft.id,
      { attachments: [file('b.txt', 'BB')], starred: true },
      [],
    );
    const read = await graphDrafts.get(grant, draft.id);
    // Assess
    for (const d of [draft, changed, replaced, read]) expect(validDraft(d)).toBe(true);
    expect(draft).toMatchObject({
      object: 'draft',
      grant_id: grant.id,
      subject: 'Ideas',
      body: 'First thoughts',
      to: [],
      folders: [fake.folderId(email, 'drafts')],
      metadata: { key1: 'x' },
    });
    expect(sizes(draft)).toEqual([['a.txt', 1]]);
    expect(changed).toMatchObject({ id: draft.id, subject: 'Ideas', body: 'Second thoughts', to: [{ email: bob }] });
    expect(sizes(changed)).toEqual([['a.txt', 1]]);
    expect(sizes(replaced)).toEqual([['b.txt', 2]]);
    expect(read).toMatchObject({
      id: draft.id,
      subject: 'Ideas',
      to: [{ email: bob }],
      starred: true,
      metadata: { key1: 'x' },
    });
  });

  it('adds an attachment over 3 MB through an upload session (a range retried after a 503), one under it with the create', async () => {
    // Prepare
    const large = Buffer.alloc(3_500_000, 2);
    const since = fake.requests().length;
    fake.inject({ path: /^\/upload\//, method: 'PUT', status: 503, retryAfter: 0 });
    // Act
    const draft = await graphDrafts.create(
      grant,
      {
        to: [{ email: bob }],
        subject: 'Big file',
        attachments: [file('small.txt', 'tiny'), file('big.bin', large, 'application/octet-stream')],
      },
      [],
    );
    // Assess
    expect(validDraft(draft)).toBe(true);
    expect(sizes(draft)).toEqual([
      ['small.txt', 4],
      ['big.bin', 3_500_000],
    ]);
    const calls = callsSince(since);
    expect(calls.filter((c) => /^POST .*\/attachments 201$/.test(c))).toEqual([]);
    expect(calls.filter((c) => /createUploadSession 201$/.test(c))).toHaveLength(1);
    expect(calls.filter((c) => /^PUT \/upload\//.test(c)).map((c) => c.slice(-3))).toEqual(['503', '201']);
    const bytes = await fetch(
      `${fake.url}/v1.0/me/messages/${draft.id}/attachments/${draft.attachments[1]!.id}/$value`,
      { headers: { authorization: `Bearer token-of-${email}` } },
    ).then((r) => r.arrayBuffer());
    expect(Buffer.from(bytes).equals(large)).toBe(true);
  });

  it("keeps a reply draft in the answered message's conversation, and X- headers only", async () => {
    // Prepare
    const original = fake.deliver(email, { from: bob, to: email, subject: 'Lunch?', text: 'Tomorrow?' });
    const since = fake.requests().length;
    // Act
    const reply = await graphDrafts.create(
      grant,
      {
        to: [{ email: bob }],
        subject: 'Re: Lunch?',
        body: '<p>Yes</p>',
        reply_to_message_id: original.id,
        custom_headers: [{ name: 'X-Ref', value: 'lunch' }],
        attachments: [file('menu.txt', 'soup')],
      },
      [],
    );
    const refused = await graphDrafts
      .create(grant, { custom_headers: [{ name: 'Keywords', value: 'x' }] }, [])
      .catch((e: unknown) => e);
    // Assess
    expect(validDraft(reply)).toBe(true);
    expect(reply).toMatchObject({
      thread_id: original.conversationId,
      subject: 'Re: Lunch?',
      body: '<p>Yes</p>',
      to: [{ email: bob }],
    });
    expect(reply.in_reply_to).toBe(original.internetMessageId);
    expect(sizes(reply)).toEqual([['menu.txt', 4]]);
    expect(
      callsSince(since).filter((c) => /^POST \/v1\.0\/me\/messages\/[^/]+\/createReply 201$/.test(c)),
    ).toHaveLength(1);
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect((refused as Error).message).toMatch(/only name X- headers/);
  });

  it('lists drafts with filters, a page at a time', async () => {
    // Prepare
    const mine = await Promise.all(
      ['Page one', 'Page two', 'Page three'].map((subject) =>
        graphDrafts.create(grant, { subject, to: [{ email: bob }] }, []),
      ),
    );
    // Act
    const first = await graphDrafts.list(grant, { subject: 'Page' }, 2);
    const second = await graphDrafts.list(grant, { subject: 'Page', page_token: first.nextCursor! }, 2);
    const starred = await graphDrafts.list(grant, { starred: true }, 50);
    const badToken = await graphDrafts.list(grant, { page_token: 'not-a-token' }, 2).catch((e: unknown) => e);
    const metadata = await graphDrafts.list(grant, { metadata_pair: 'key1:x' }, 2).catch((e: unknown) => e);
    // Assess
    for (const d of [...first.items, ...second.items]) expect(validDraft(d)).toBe(true);
    expect([...first.items, ...second.items].map((d) => d.id).sort()).toEqual(mine.map((d) => d.id).sort());
    expect(first.items).toHaveLength(2);
    expect(second.nextCursor).toBeUndefined();
    expect(starred.items.map((d) => d.subject)).toEqual(['Ideas']);
    expect(badToken).toBeInstanceOf(InvalidRequestError);
    expect(metadata).toBeInstanceOf(InvalidRequestError);
    expect((metadata as Error).message).toMatch(/metadata_pair/);
  });

  it('sends a draft: the answer is the Sent copy, the recipient gets it, the draft is gone', async () => {
    // Prepare
    const draft = await graphDrafts.create(
      grant,
      { to: [{ email: bob }], subject: 'Ready to go', body: 'Sent from a draft', metadata: { key2: 'y' } },
      [],
    );
    const empty = await graphDrafts.create(grant, { subject: 'Nobody yet' }, []);
    // Act
    const sent = await graphDraftSending.send(grant, draft.id, {});
    const noRecipient = await graphDraftSending.send(grant, empty.id, {}).catch((e: unknown) => e);
    // Assess
    expect(validMessage(sent)).toBe(true);
    expect(sent).toMatchObject({
      object: 'message',
      subject: 'Ready to go',
      folders: [fake.folderId(email, 'sentitems')],
      metadata: { key2: 'y' },
    });
    expect(sent.id).not.toBe(draft.id);
    await expect(graphDrafts.get(grant, draft.id)).rejects.toThrow(NotFoundError);
    expect(noRecipient).toBeInstanceOf(InvalidRequestError);
    expect((noRecipient as Error).message).toMatch(/has no recipient/);
    const inbox = await fetch(`${fake.url}/v1.0/me/mailFolders/inbox/messages?$top=100`, {
      headers: { authorization: `Bearer token-of-${bob}` },
    }).then((r) => r.json() as Promise<{ value: { subject: string }[] }>);
    expect(inbox.value.map((m) => m.subject)).toContain('Ready to go');
  });

  it('deletes a draft, and names no draft for a sent message or an unknown ID', async () => {
    // Prepare
    const draft = await graphDrafts.create(grant, { subject: 'Discard me' }, []);
    const received = fake.deliver(email, { from: bob, to: email, subject: 'Not a draft', text: 'x' });
    // Act
    await graphDrafts.delete(grant, draft.id);
    // Assess
    await expect(graphDrafts.get(grant, draft.id)).rejects.toThrow(NotFoundError);
    await expect(graphDrafts.get(grant, received.id)).rejects.toThrow(NotFoundError);
    await expect(graphDrafts.delete(grant, received.id)).rejects.toThrow(NotFoundError);
    await expect(graphDrafts.update(grant, 'no/such', { subject: 'x' }, [])).rejects.toThrow(NotFoundError);
  });

  it("retries Graph's 429 on a draft's create, and answers a 503 that outlasts the retries as our 504", async () => {
    // Prepare
    fake.inject({ path: /\/me\/messages$/, method: 'POST', status: 429, retryAfter: 0 });
    // Act
    const draft = await graphDrafts.create(grant, { subject: 'After a 429' }, []);
    fake.inject({ path: /\/me\/messages$/, method: 'POST', status: 503, retryAfter: 0, times: 4 });
    const unavailable = await graphDrafts.create(grant, { subject: 'Never' }, []).catch((e: unknown) => e);
    // Assess
    expect(draft.subject).toBe('After a 429');
    expect(unavailable).toMatchObject({ status: 504 });
  });
});
