import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gmailDrafts, gmailDraftSending } from '#shared/google/drafts';
import { gmailThreads } from '#shared/google/threads';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { uniqueEmail } from '../support/factories';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Provider A's drafts, live (shared/google/drafts.ts), against the local Google fake: Gmail's own
 * drafts composed as every outgoing message is, changed field by field with their attachments kept,
 * listed with filters, a reply draft in its thread, sent through drafts.send.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;
const bob = uniqueEmail('bob');

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google drafts'));
  fake.addUser({ email: bob, accessToken: `token-of-${bob}` });
});

afterAll(async () => {
  await fake?.close();
});

const file = (name: string, text: string) => ({
  filename: name,
  content_type: 'text/plain',
  content: Buffer.from(text).toString('base64'),
});

describe("provider A's drafts, live", () => {
  it('creates a draft without recipients, changes it field by field, its attachment kept', async () => {
    const draft = await gmailDrafts.create(
      grant,
      { subject: 'Ideas', body: 'First thoughts', attachments: [file('a.txt', 'A')] },
      [],
    );
    expect(draft).toMatchObject({
      object: 'draft',
      grant_id: grant.id,
      subject: 'Ideas',
      body: 'First thoughts',
      to: [],
    });
    expect(draft.id).toMatch(/^r/);
    expect(draft.attachments.map((a) => a.filename)).toEqual(['a.txt']);
    const changed = await gmailDrafts.update(grant, draft.id, { to: [{ email: bob }], body: 'Second thoughts' }, []);
    expect(changed).toMatchObject({ id: draft.id, subject: 'Ideas', body: 'Second thoughts', to: [{ email: bob }] });
    expect(changed.attachments.map((a) => a.filename)).toEqual(['a.txt']);
    const replaced = await gmailDrafts.update(grant, draft.id, { attachments: [file('b.txt', 'B')] }, []);
    expect(replaced.attachments.map((a) => a.filename)).toEqual(['b.txt']);
    expect(await gmailDrafts.get(grant, draft.id)).toMatchObject({ subject: 'Ideas', to: [{ email: bob }] });
  });

  it('lists drafts with filters, and keeps a reply draft in its thread', async () => {
    const original = fake.deliver(
      email,
      `From: ${bob}\r\nTo: ${email}\r\nSubject: Question\r\nMessage-ID: <q@example.org>\r\n\r\nAre you in?`,
    );
    const reply = await gmailDrafts.create(
      grant,
      { to: [{ email: bob }], subject: 'Re: Question', body: 'Maybe', reply_to_message_id: original.id },
      [],
    );
    expect(reply.thread_id).toBe(original.threadId);
    expect((await gmailThreads.get(grant, original.threadId)).draft_ids).toEqual([reply.id]);
    expect((await gmailDrafts.list(grant, { thread_id: original.threadId }, 50)).items.map((d) => d.id)).toEqual([
      reply.id,
    ]);
    expect((await gmailDrafts.list(grant, { subject: 'Question' }, 50)).items.map((d) => d.id)).toEqual([reply.id]);
    expect((await gmailDrafts.list(grant, {}, 50)).items.length).toBeGreaterThanOrEqual(2);
  });

  it('sends a draft through Gmail: the answer is the sent message, the draft is gone', async () => {
    const draft = await gmailDrafts.create(grant, { to: [{ email: bob }], subject: 'Ready', body: 'Go' }, []);
    const sent = await gmailDraftSending.send(grant, draft.id, {});
    expect(sent).toMatchObject({ object: 'message', subject: 'Ready', to: [{ email: bob }] });
    expect(sent.folders).toContain('SENT');
    await expect(gmailDrafts.get(grant, draft.id)).rejects.toThrow(NotFoundError);
    const empty = await gmailDrafts.create(grant, { subject: 'Nobody' }, []);
    await expect(gmailDraftSending.send(grant, empty.id, {})).rejects.toThrow(InvalidRequestError);
    await gmailDrafts.delete(grant, empty.id);
    await expect(gmailDrafts.delete(grant, empty.id)).rejects.toThrow(NotFoundError);
  });

  it('sent nothing Gmail does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
