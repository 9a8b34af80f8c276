import { randomBytes } from 'node:crypto';
import { simpleParser } from 'mailparser';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { blobExists } from '#shared/aws/mail-bucket';
import { getGrant, type GrantRecord } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';
import type { ApplicationId, GrantId } from '#shared/ids';
import { completeAttachmentUpload, createAttachmentUpload, uploadObjectKey } from '#shared/uploads/attachments';
import { graphSend } from '#shared/microsoft/send';
import { gmailDrafts } from '#shared/google/drafts';
import { gmailSend } from '#shared/google/send';
import { startGoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';
import { startGraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';
import { clock } from '#shared/time';
import type { SendMessageBody } from '#schemas/mail';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { sunkRaw, waitForSunk } from '../support/mail';
import { jobsDone } from '../support/outbox-relay';
import { checkResponse } from '../support/response-check';
import { expireUploads } from '../support/uploads';

/**
 * Large attachments (`attachment-uploads`, `…/complete`): the file PUT straight to S3 through the
 * presigned URL, checked at completion, then named by ID in a send or a draft; refusals store nothing.
 */
let gateway: Gateway;
let api: ApiClient;
let apiKey: string;
let applicationId: string;
type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
let alice: Grant;
let bob: Grant;
let restoreClock: (() => void) | undefined;

beforeAll(async () => {
  gateway = await startGateway();
  ({ apiKey, applicationId } = await makeApplication());
  api = apiClient(gateway.url, apiKey);
  [alice, bob] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
});
afterEach(() => {
  restoreClock?.();
  restoreClock = undefined;
});
afterAll(async () => gateway?.close());

const outside = () => uniqueEmail('person').replace('@agents.test', '@example.net');
const uploadsPath = (grantId: string) => `/v3/grants/${grantId}/attachment-uploads`;

interface Session {
  attachment_id: string;
  method: 'PUT';
  url: string;
  headers: Record<string, string>;
  expires_at: string;
  max_size: number;
  size: number;
}

function expectError(response: ApiResponse, status: number, type: string, ...fragments: string[]) {
  expect(response.status, response.text).toBe(status);
  expect(response.body.error.type).toBe(type);
  for (const fragment of fragments) expect(response.body.error.message).toContain(fragment);
}

function conforms(method: string, path: string, response: ApiResponse) {
  expect(checkResponse(method, path, new URLSearchParams(), response.status, response.body)).toEqual([]);
}

async function create(grantId: string, body: Record<string, unknown>): Promise<Session> {
  const response = await api.post(uploadsPath(grantId), body);
  expect(response.status, response.text).toBe(201);
  conforms('POST', uploadsPath(grantId), response);
  return response.body.data as Session;
}

/** PUTs the file to the presigned URL as a client does: no API key, the session's headers. */
async function put(session: Session, bytes: Buffer, headers = session.headers): Promise<number> {
  const response = await fetch(session.url, { method: 'PUT', headers, body: bytes });
  await response.arrayBuffer();
  return response.status;
}

const complete = (grantId: string, attachmentId: string) =>
  api.post(`${uploadsPath(grantId)}/${attachmentId}/complete`, {});

/** A completed upload of `bytes` for the grant. */
async function uploaded(grantId: string, bytes: Buffer, filename = 'report.pdf', contentType = 'application/pdf') {
  const session = await create(grantId, { filename, content_type: contentType, size: bytes.length });
  expect(await put(session, bytes)).toBe(200);
  const done = await complete(grantId, session.attachment_id);
  expect(done.status, done.text).toBe(200);
  return session;
}

const objectKey = (grantId: string, id: string) => uploadObjectKey(grantId, id as never);

/** A completed upload of a live provider's grant (its largest file: 25 MB), made by the service as the API would. */
async function readyUpload(grant: GrantRecord, bytes: Buffer) {
  const session = await createAttachmentUpload(grant, {
    filename: 'video.mp4',
    content_type: 'video/mp4',
    size: bytes.length,
  });
  expect(session.max_size).toBe(25 * 1024 * 1024);
  expect(await put(session as Session, bytes)).toBe(200);
  await completeAttachmentUpload(grant, session.attachment_id);
  return session;
}

describe('POST /v3/grants/{grant_id}/attachment-uploads', () => {
  it('answers 201 with a presigned PUT for the declared file, valid an hour', async () => {
    // Act
    const before = clock.nowSeconds();
    const session = await create(alice.id, { filename: 'report.pdf', content_type: 'application/pdf', size: 1234 });

    // Assess
    expect(session).toMatchObject({
      attachment_id: expect.stringMatching(/^upl_[0-9a-z]{26}$/),
      method: 'PUT',
      headers: { 'Content-Type': 'application/pdf' },
      max_size: 25 * 1024 * 1024,
      size: 1234,
      content_type: 'application/pdf',
      filename: 'report.pdf',
      grant_id: alice.id,
    });
    expect(new URL(session.url).pathname).toContain(`uploads/${alice.id}/${session.attachment_id}`);
    const expires = Date.parse(session.expires_at) / 1000;
    expect(expires - before).toBeGreaterThanOrEqual(3599);
    expect(expires - before).toBeLessThanOrEqual(3601);
  });

  it('refuses a declared size over the limit, a bad content type or a missing field: 400, nothing stored', async () => {
    const grant = await makeAgentGrant(api);
    const cases: [Record<string, unknown>, string][] = [
      [{ filename: 'big.bin', content_type: 'application/zip', size: 25 * 1024 * 1024 + 1 }, "'size'"],
      [{ filename: 'a.bin', content_type: 'nonsense' }, "'content_type'"],
      [{ content_type: 'application/zip' }, "'filename' is required"],
      [{ filename: 'a.bin', content_type: 'application/zip', size: 0 }, "'size'"],
    ];
    for (const [body, fragment] of cases)
      expectError(await api.post(uploadsPath(grant.id), body), 400, 'invalid_request_error', fragment);
    // The sentinel: the grant's uploads partition is empty.
    expect(await expireUploads([grant.id])).toBe(0);
  });

  it('is not offered for a provider without mail (zoom): 400 saying so, nothing stored', async () => {
    const stored = await getGrant(applicationId as ApplicationId, alice.id as GrantId);
    const grant: GrantRecord = { ...stored!, provider: 'zoom' };
    const error = await createAttachmentUpload(grant, { filename: 'a.pdf', content_type: 'application/pdf' }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(InvalidRequestError);
    expect((error as Error).message).toContain('not offered for zoom grants');
  });
});

describe('POST /v3/grants/{grant_id}/attachment-uploads/{attachment_id}/complete', () => {
  it('checks the stored file and marks the upload ready; a second completion is a 409', async () => {
    // Prepare
    const bytes = randomBytes(70_000);
    const session = await create(alice.id, {
      filename: 'data.bin',
      content_type: 'application/octet-stream',
      size: bytes.length,
    });
    expect(await put(session, bytes)).toBe(200);

    // Act
    const done = await complete(alice.id, session.attachment_id);
    const again = await complete(alice.id, session.attachment_id);

    // Assess
    expect(done.status, done.text).toBe(200);
    conforms('POST', `${uploadsPath(alice.id)}/${session.attachment_id}/complete`, done);
    expect(done.body.data).toEqual({
      attachment_id: session.attachment_id,
      grant_id: alice.id,
      status: 'ready',
      size: bytes.length,
    });
    expectError(again, 409, 'conflict_error', 'already complete');
  });

  it('refuses nothing uploaded, another size than declared, another content type: 400, the object deleted', async () => {
    // Prepare
    const session = await create(alice.id, { filename: 'x.pdf', content_type: 'application/pdf', size: 1000 });

    // Act / Assess: nothing uploaded yet
    expectError(await complete(alice.id, session.attachment_id), 400, 'invalid_request_error', 'Nothing was uploaded');

    // Another size: refused and deleted, the upload stays usable
    expect(await put(session, randomBytes(999))).toBe(200);
    expectError(
      await complete(alice.id, session.attachment_id),
      400,
      'invalid_request_error',
      '999 bytes, not the 1000 declared',
    );
    expect(await blobExists(objectKey(alice.id, session.attachment_id))).toBe(false);

    // Another content type than declared: AWS refuses such a PUT (Content-Type is signed), the local
    // emulator stores it, and completion refuses and deletes it
    expect(await put(session, randomBytes(1000), { 'Content-Type': 'text/plain' })).toBe(200);
    expectError(
      await complete(alice.id, session.attachment_id),
      400,
      'invalid_request_error',
      "sent as 'text/plain', not the 'application/pdf' declared",
    );
    expect(await blobExists(objectKey(alice.id, session.attachment_id))).toBe(false);

    // The right size completes
    expect(await put(session, randomBytes(1000))).toBe(200);
    expect((await complete(alice.id, session.attachment_id)).status).toBe(200);
  });

  it('refuses a file over the provider limit: 400, file and upload deleted', async () => {
    // Prepare: no size declared, so the presigned PUT takes any size
    const session = await create(alice.id, { filename: 'huge.bin', content_type: 'application/octet-stream' });
    expect(session.size).toBe(0);
    expect(await put(session, Buffer.alloc(25 * 1024 * 1024 + 1))).toBe(200);

    // Act
    const refused = await complete(alice.id, session.attachment_id);

    // Assess
    expectError(refused, 400, 'invalid_request_error', `${25 * 1024 * 1024 + 1} bytes`, `at most ${25 * 1024 * 1024}`);
    expect(await blobExists(objectKey(alice.id, session.attachment_id))).toBe(false);
    expectError(await complete(alice.id, session.attachment_id), 404, 'not_found_error');
  });

  it("is a 404 for another grant's upload and for an unknown ID", async () => {
    const session = await create(alice.id, { filename: 'x.pdf', content_type: 'application/pdf' });
    expect(await put(session, randomBytes(10))).toBe(200);
    expectError(await complete(bob.id, session.attachment_id), 404, 'not_found_error', session.attachment_id);
    expectError(await complete(alice.id, 'upl_01jzzzzzzzzzzzzzzzzzzzzzzz'), 404, 'not_found_error');
    expectError(await complete(alice.id, 'not-an-id'), 404, 'not_found_error');
    // Still pending for its own grant.
    expect((await complete(alice.id, session.attachment_id)).status).toBe(200);
  });

  it('is a 400 once the hour is over, even before the table removes the upload', async () => {
    const session = await create(alice.id, { filename: 'x.pdf', content_type: 'application/pdf' });
    expect(await put(session, randomBytes(10))).toBe(200);
    restoreClock = clock.set(() => Date.now() + 3601 * 1000);
    expectError(await complete(alice.id, session.attachment_id), 400, 'invalid_request_error', 'expired at');
  });
});

describe('an upload named in a send or a draft', () => {
  it('goes out in the MIME of a send, and the Sent copy keeps it', async () => {
    // Prepare
    const bytes = randomBytes(300_000);
    const session = await uploaded(alice.id, bytes);
    const to = outside();

    // Act
    const sent = await api.post(`/v3/grants/${alice.id}/messages/send`, {
      to: [{ email: to }, { email: bob.email }],
      subject: 'The report',
      body: '<p>Attached.</p>',
      attachments: [
        { filename: 'note.txt', content_type: 'text/plain', content: Buffer.from('small').toString('base64') },
        { id: session.attachment_id },
      ],
    });

    // Assess
    expect(sent.status, sent.text).toBe(200);
    conforms('POST', `/v3/grants/${alice.id}/messages/send`, sent);
    const attachments = sent.body.data.attachments as {
      id: string;
      filename: string;
      size: number;
      content_type: string;
    }[];
    expect(attachments.map((a) => [a.filename, a.content_type, a.size])).toEqual([
      ['note.txt', 'text/plain', 5],
      ['report.pdf', 'application/pdf', bytes.length],
    ]);
    const [relayed] = await waitForSunk(to);
    const parsed = await simpleParser(Buffer.from(await sunkRaw(relayed!.id), 'latin1'));
    expect(parsed.subject).toBe('The report');
    // The message's own fields, as composed: the multipart around the files keeps them as they are.
    expect(parsed.from?.value.map((a) => a.address)).toEqual([alice.email]);
    expect((Array.isArray(parsed.to) ? parsed.to : [parsed.to]).flatMap((t) => t!.value.map((a) => a.address))).toEqual(
      [to, bob.email],
    );
    expect(Math.abs(parsed.date!.getTime() - Date.now())).toBeLessThan(300_000);
    expect(parsed.messageId).toMatch(/^<.+@.+>$/);
    expect(parsed.headers.get('mime-version')).toBe('1.0');
    expect(parsed.html).toContain('<p>Attached.</p>');
    expect(parsed.attachments.map((a) => [a.filename, a.contentType, a.size])).toEqual([
      ['note.txt', 'text/plain', 5],
      ['report.pdf', 'application/pdf', bytes.length],
    ]);
    expect(parsed.attachments[1]!.content.equals(bytes)).toBe(true);
    const download = await fetch(
      `${gateway.url}/v3/grants/${alice.id}/attachments/${attachments[1]!.id}/download?message_id=${sent.body.data.id}`,
      { headers: { authorization: `Bearer ${apiKey}` } },
    );
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
    // The local recipient's copy (stored by the delivery job) has it too.
    await jobsDone();
    const inbox = await api.get(`/v3/grants/${bob.id}/messages?subject=${encodeURIComponent('The report')}`);
    const [copy] = inbox.body.data as { id: string; attachments: { id: string; size: number }[] }[];
    expect(copy!.attachments.map((a) => a.size)).toEqual([5, bytes.length]);
    const received = await fetch(
      `${gateway.url}/v3/grants/${bob.id}/attachments/${copy!.attachments[1]!.id}/download?message_id=${copy!.id}`,
      { headers: { authorization: `Bearer ${apiKey}` } },
    );
    expect(Buffer.from(await received.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it('is copied into a draft, which keeps it after the upload is gone, and sends it', async () => {
    // Prepare
    const bytes = randomBytes(50_000);
    const session = await uploaded(alice.id, bytes, 'plan.zip', 'application/zip');

    // Act
    const draft = await api.post(`/v3/grants/${alice.id}/drafts`, {
      to: [{ email: bob.email }],
      subject: 'Plan',
      attachments: [{ id: session.attachment_id }],
    });
    expect(draft.status, draft.text).toBe(200);
    expect(await expireUploads([alice.id])).toBeGreaterThanOrEqual(1);

    // Assess
    const [attachment] = draft.body.data.attachments as { id: string; size: number; filename: string }[];
    expect(attachment).toMatchObject({ filename: 'plan.zip', size: bytes.length });
    expect(await blobExists(objectKey(alice.id, session.attachment_id))).toBe(false);
    const download = await fetch(
      `${gateway.url}/v3/grants/${alice.id}/attachments/${attachment!.id}/download?message_id=${draft.body.data.id}`,
      { headers: { authorization: `Bearer ${apiKey}` } },
    );
    expect(Buffer.from(await download.arrayBuffer()).equals(bytes)).toBe(true);
    const sent = await api.post(`/v3/grants/${alice.id}/drafts/${draft.body.data.id}`, {});
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.data.attachments.map((a: { size: number }) => a.size)).toEqual([bytes.length]);
    await jobsDone();
  });

  it('refuses an upload not completed, expired, or of another grant: nothing sent or stored', async () => {
    // Prepare
    const to = outside();
    const pending = await create(alice.id, { filename: 'p.pdf', content_type: 'application/pdf' });
    const ready = await uploaded(alice.id, randomBytes(100));
    const send = (grantId: string, id: string) =>
      api.post(`/v3/grants/${grantId}/messages/send`, { to: [{ email: to }], subject: 'x', attachments: [{ id }] });

    // Act / Assess
    expectError(
      await send(alice.id, pending.attachment_id),
      400,
      'invalid_request_error',
      "'attachments[0]'",
      'not complete',
    );
    expectError(await send(bob.id, ready.attachment_id), 404, 'not_found_error', ready.attachment_id);
    const draft = await api.post(`/v3/grants/${bob.id}/drafts`, {
      subject: 'x',
      attachments: [{ id: ready.attachment_id }],
    });
    expectError(draft, 404, 'not_found_error');
    restoreClock = clock.set(() => Date.now() + 3601 * 1000);
    expectError(await send(alice.id, ready.attachment_id), 400, 'invalid_request_error', 'expired at');
    restoreClock();
    restoreClock = undefined;
    expect(await waitForSunk(to, 300)).toEqual([]);
    const stored = await api.get(`/v3/grants/${alice.id}/messages?subject=x`);
    expect(stored.status).toBe(200);
    expect(stored.body.data).toEqual([]);
    expect((await api.get(`/v3/grants/${bob.id}/drafts`)).body.data).toEqual([]);
  });

  it('is removed with its file once its hour is over (the TTL), then unknown', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const session = await uploaded(grant.id, randomBytes(100));
    const pending = await create(grant.id, { filename: 'p.pdf', content_type: 'application/pdf' });
    expect(await put(pending, randomBytes(10))).toBe(200);

    // Act
    expect(await expireUploads([grant.id])).toBe(2);

    // Assess
    expect(await blobExists(objectKey(grant.id, session.attachment_id))).toBe(false);
    expect(await blobExists(objectKey(grant.id, pending.attachment_id))).toBe(false);
    const sent = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: outside() }],
      attachments: [{ id: session.attachment_id }],
    });
    expectError(sent, 404, 'not_found_error', 'removed an hour after');
  });
});

describe('an upload sent from a microsoft grant', () => {
  it("goes to the message's draft through Graph's upload session, in ranges, with no MIME request", async () => {
    // Prepare
    const fake = await startGraphFake();
    try {
      const { grant } = await connectFakeMicrosoftGrant(fake, 'microsoft uploads');
      const bob = uniqueEmail('bob');
      fake.addUser({ email: bob, accessToken: `token-of-${bob}` });
      const bytes = randomBytes(6_000_000);
      const session = await readyUpload(grant, bytes);
      const since = fake.requests().length;

      // Act
      const { result } = await graphSend.send(
        grant,
        // As the send endpoint validates it (schemas/mail.ts: an attachment is inline or an upload's ID).
        {
          to: [{ email: bob }],
          subject: 'The video',
          body: 'Here',
          attachments: [{ id: session.attachment_id }],
        } as unknown as SendMessageBody,
        { files: [], requestId: 'req-upload' },
      );

      // Assess
      const calls = fake
        .requests()
        .slice(since)
        .map((r) => `${r.method} ${r.path.replace(/\?.*/, '')} ${r.status}`);
      expect(calls.filter((c) => c.includes('sendMail'))).toEqual([]);
      expect(calls.filter((c) => /createUploadSession 201$/.test(c))).toHaveLength(1);
      expect(calls.filter((c) => /^PUT \/upload\//.test(c)).length).toBeGreaterThanOrEqual(2);
      expect(result.attachments.map((a) => [a.filename, a.size])).toEqual([['video.mp4', bytes.length]]);
      const inbox = await fetch(`${fake.url}/v1.0/me/mailFolders/inbox/messages?$expand=attachments`, {
        headers: { authorization: `Bearer token-of-${bob}` },
      }).then((r) => r.json() as Promise<{ value: { attachments: { contentBytes: string }[] }[] }>);
      expect(Buffer.from(inbox.value[0]!.attachments[0]!.contentBytes, 'base64').equals(bytes)).toBe(true);
      expect(fake.violations()).toEqual([]);
    } finally {
      await fake.close();
    }
  });
});

describe('an upload sent from a google grant', () => {
  it('goes to Gmail as a media upload of the MIME (a small message still as raw JSON), in a send and in a draft', async () => {
    // Prepare
    const fake = await startGoogleFake();
    try {
      const { grant } = await connectFakeGoogleGrant(fake, 'google uploads');
      const bob = uniqueEmail('bob');
      fake.addUser({ email: bob, accessToken: `token-of-${bob}` });
      const bytes = randomBytes(6_000_000);
      const session = await readyUpload(grant, bytes);
      const sendOf = (body: Record<string, unknown>) =>
        gmailSend.send(grant, body as unknown as SendMessageBody, { files: [], requestId: 'req-upload' });

      // Act
      await sendOf({ to: [{ email: bob }], subject: 'Small', body: 'No upload' });
      const small = [...fake.mediaUploads];
      const { result } = await sendOf({
        to: [{ email: bob }],
        subject: 'The video',
        body: 'Here',
        attachments: [{ id: session.attachment_id }],
      });
      const draft = await gmailDrafts.create(
        grant,
        { to: [{ email: bob }], subject: 'Draft video', attachments: [{ id: session.attachment_id }] } as never,
        [],
      );

      // Assess
      expect(small).toEqual([]);
      expect(fake.mediaUploads.map((u) => [u.path, u.uploadType])).toEqual([
        ['/upload/gmail/v1/users/me/messages/send', 'multipart'],
        ['/upload/gmail/v1/users/me/drafts', 'multipart'],
      ]);
      // The MIME as it is: the file as base64 in lines of 76 (a third larger, and CRLFs), not
      // base64 again inside JSON (a third larger again).
      const asBase64 = ((bytes.length * 4) / 3) * (78 / 76);
      expect(fake.mediaUploads[0]!.bytes).toBeGreaterThan(asBase64);
      expect(fake.mediaUploads[0]!.bytes).toBeLessThan(asBase64 + 20_000);
      expect(result.attachments.map((a) => a.filename)).toEqual(['video.mp4']);
      expect(draft.attachments?.map((a) => a.filename)).toEqual(['video.mp4']);
      const gmail = (path: string) =>
        fetch(`${fake.url}/gmail/v1/users/me/${path}`, { headers: { authorization: `Bearer token-of-${bob}` } }).then(
          (r) => r.json() as Promise<Record<string, unknown>>,
        );
      const listed = (await gmail('messages?q=subject:video')) as { messages: { id: string }[] };
      expect(listed.messages).toHaveLength(1);
      const { raw } = (await gmail(`messages/${listed.messages[0]!.id}?format=raw`)) as { raw: string };
      const received = await simpleParser(Buffer.from(raw, 'base64url'));
      expect(received.attachments.map((a) => a.filename)).toEqual(['video.mp4']);
      expect(received.attachments[0]!.content.equals(bytes)).toBe(true);
      expect(fake.requestViolations).toEqual([]);
      expect(fake.responseViolations).toEqual([]);
    } finally {
      await fake.close();
    }
  });
});
