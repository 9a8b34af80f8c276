import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { sunkRaw, waitForSunk } from '../support/mail';
import { jobsDone } from '../support/outbox-relay';
import { expireUploads } from '../support/uploads';

let gateway: Gateway;
let api: ApiClient;
let apiKey: string;

beforeAll(async () => {
  gateway = await startGateway();
  apiKey = (await makeApplication()).apiKey;
  api = apiClient(gateway.url, apiKey);
});

afterAll(async () => {
  await gateway?.close();
});

/** The regional tracking hostname: TRACKING_HOSTNAME's default with AWS_REGION us-east-1. */
const REGIONAL_HOSTNAME = 'track.us-east-1.switchboard.local';
const UNKNOWN_DRAFT_ID = 'drf_01jzzzzzzzzzzzzzzzzzzzzzzz';

/** An address no Agent Account hosts: mail to it is relayed to the SMTP sink. */
const outsideAddress = (prefix = 'outside') => uniqueEmail(prefix).replace('@agents.test', '@example.net');
const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

interface Draft {
  id: string;
  object: 'draft';
  grant_id: string;
  thread_id?: string;
  subject: string;
  body: string;
  from: { email: string; name?: string }[];
  to: { email: string; name?: string }[];
  attachments: { id: string; filename: string; content_type: string; size: number; is_inline: boolean }[];
  metadata: Record<string, string>;
  tracking_options: Record<string, unknown>;
  [key: string]: unknown;
}

async function createDraft(client: ApiClient, grantId: string, body: Record<string, unknown>): Promise<Draft> {
  const response = await client.post(`/v3/grants/${grantId}/drafts`, body);
  if (response.status !== 200) throw new Error(`createDraft: ${response.status} ${response.text}`);
  return response.body.data as Draft;
}

async function createSignature(grantId: string, body: string) {
  const response = await api.post(`/v3/grants/${grantId}/signatures`, { name: 'Signature', body });
  if (response.status !== 201) throw new Error(`createSignature: ${response.status} ${response.text}`);
  return response.body.data as { id: string; body: string };
}

async function createTemplate(grantId: string, body: Record<string, unknown>) {
  const response = await api.post(`/v3/grants/${grantId}/templates`, body);
  if (response.status !== 200) throw new Error(`createTemplate: ${response.status} ${response.text}`);
  return response.body.data as { id: string };
}

async function draftsFolderCount(grantId: string): Promise<number> {
  const response = await api.get(`/v3/grants/${grantId}/folders/drafts`);
  expect(response.status, response.text).toBe(200);
  return response.body.data.total_count as number;
}

/** Sends with fetch so the body can be FormData (fetch writes the multipart content type and boundary). */
async function sendForm(method: 'POST' | 'PUT', path: string, form: FormData): Promise<ApiResponse> {
  const response = await fetch(gateway.url + path, {
    method,
    headers: { authorization: `Bearer ${apiKey}` },
    body: form,
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

function expectError(response: ApiResponse, status: number, type: string, ...fragments: string[]) {
  expect(response.status, response.text).toBe(status);
  expect(response.body?.error?.type, response.text).toBe(type);
  expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
  for (const fragment of fragments) expect(response.body.error.message).toContain(fragment);
}

/** Sends a message from one Agent Account to another and returns it as it landed in the recipient's inbox. */
async function receivedMessage(from: { id: string }, to: { id: string; email: string }, subject: string) {
  const sent = await api.post(`/v3/grants/${from.id}/messages/send`, {
    to: [{ email: to.email }],
    subject,
    body: '<p>Original</p>',
  });
  expect(sent.status, sent.text).toBe(200);
  await jobsDone();
  const inbox = await api.get(`/v3/grants/${to.id}/messages?in=inbox`);
  expect(inbox.status, inbox.text).toBe(200);
  const message = inbox.body.data.find((m: { subject: string }) => m.subject === subject);
  expect(message, inbox.text).toBeDefined();
  return message as { id: string; thread_id: string; subject: string };
}

describe('POST /v3/grants/{grant_id}/drafts (JSON)', () => {
  it('creates a draft with every field and answers the Draft object', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const signature = await createSignature(grant.id, '<p>-- Ann</p>');
    const body = {
      to: [{ email: 'to@example.net', name: 'To Person' }],
      cc: [{ email: 'cc@example.net' }],
      bcc: [{ email: 'bcc@example.net' }],
      reply_to: [{ email: 'replies@example.net', name: 'Replies' }],
      from: [{ email: grant.email, name: 'Ann Agent' }],
      subject: 'Quarterly numbers',
      body: '<p>Here they are</p>',
      starred: true,
      metadata: { key1: 'finance', note: 'q3' },
      attachments: [{ filename: 'numbers.csv', content_type: 'text/csv', content: base64('a,b\n1,2\n') }],
      is_plaintext: false,
      custom_headers: [{ name: 'X-Campaign', value: 'q3-report' }],
      signature_id: signature.id,
    };

    // Act
    const response = await api.post(`/v3/grants/${grant.id}/drafts`, body);

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.headers.get('x-request-id')).toBe(response.body.request_id);
    const draft = response.body.data;
    expect(draft).toEqual({
      id: expect.stringMatching(/^drf_[0-9a-z]{26}$/),
      object: 'draft',
      grant_id: grant.id,
      subject: 'Quarterly numbers',
      from: [{ email: grant.email, name: 'Ann Agent' }],
      to: body.to,
      cc: body.cc,
      bcc: body.bcc,
      reply_to: body.reply_to,
      date: draft.updated_at,
      starred: true,
      unread: false,
      folders: ['drafts'],
      snippet: 'Here they are',
      body: '<p>Here they are</p>',
      is_plaintext: false,
      attachments: [
        {
          id: expect.stringMatching(/^att_[0-9a-z]{26}$/),
          grant_id: grant.id,
          filename: 'numbers.csv',
          content_type: 'text/csv',
          size: 8,
          is_inline: false,
          content_disposition: 'attachment',
        },
      ],
      metadata: { key1: 'finance', note: 'q3' },
      custom_headers: [{ name: 'X-Campaign', value: 'q3-report' }],
      signature_id: signature.id,
      tracking_options: { opens: false, links: false, thread_replies: false },
      created_at: expect.any(Number),
      updated_at: expect.any(Number),
    });
    expect(draft.created_at).toBeGreaterThan(1_700_000_000);
    expect(draft.updated_at).toBe(draft.created_at);
    // The signature is appended when the draft is sent, not stored in the body.
    expect(draft.body).not.toContain('-- Ann');
    const got = await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`);
    expect(got.status, got.text).toBe(200);
    expect(got.body.data).toEqual(draft);
  });

  it('creates an empty draft from an empty body, sent from the grant address', async () => {
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, {});
    expect(draft).toMatchObject({
      subject: '',
      body: '',
      from: [{ email: grant.email }],
      to: [],
      cc: [],
      bcc: [],
      reply_to: [],
      attachments: [],
      metadata: {},
      starred: false,
      is_plaintext: false,
      custom_headers: [],
    });
    expect(draft).not.toHaveProperty('signature_id');
    expect(draft).not.toHaveProperty('reply_to_message_id');
    expect(draft).not.toHaveProperty('thread_id');
  });

  it('stores is_plaintext', async () => {
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, { subject: 'Plain', body: 'Just text', is_plaintext: true });
    expect(draft.is_plaintext).toBe(true);
    expect((await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`)).body.data.is_plaintext).toBe(true);
  });

  it('replies to a received message: reply_to_message_id and the thread of the original', async () => {
    // Prepare
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const original = await receivedMessage(a, b, 'Question for B');

    // Act
    const draft = await createDraft(api, b.id, {
      reply_to_message_id: original.id,
      to: [{ email: a.email }],
      subject: 'Re: Question for B',
      body: '<p>Answer</p>',
    });

    // Assess
    expect(draft.reply_to_message_id).toBe(original.id);
    expect(draft.thread_id).toBe(original.thread_id);
    const thread = await api.get(`/v3/grants/${b.id}/threads/${original.thread_id}`);
    expect(thread.status, thread.text).toBe(200);
    expect(thread.body.data.draft_ids).toEqual([draft.id]);
    expect(thread.body.data.has_drafts).toBe(true);
    const filtered = await api.get(`/v3/grants/${b.id}/drafts?thread_id=${original.thread_id}`);
    expect(filtered.body.data.map((d: Draft) => d.id)).toEqual([draft.id]);
  });

  it('answers 404 when reply_to_message_id is not a message of the grant', async () => {
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const original = await receivedMessage(a, b, 'Only for B');
    const c = await makeAgentGrant(api);
    expectError(
      await api.post(`/v3/grants/${c.id}/drafts`, { reply_to_message_id: original.id }),
      404,
      'not_found_error',
    );
    expect(await draftsFolderCount(c.id)).toBe(0);
  });

  it('answers 404 for a signature_id that is not a signature of the grant, creating nothing', async () => {
    const owner = await makeAgentGrant(api);
    const grant = await makeAgentGrant(api);
    const foreign = await createSignature(owner.id, '<p>Not yours</p>');
    for (const id of ['sig_01jzzzzzzzzzzzzzzzzzzzzzzz', foreign.id]) {
      expectError(
        await api.post(`/v3/grants/${grant.id}/drafts`, { to: [{ email: 'x@example.net' }], signature_id: id }),
        404,
        'not_found_error',
        id,
      );
    }
    expect((await api.get(`/v3/grants/${grant.id}/drafts`)).body.data).toEqual([]);
    expect(await draftsFolderCount(grant.id)).toBe(0);
  });

  it("refuses a 'from' other than the grant's own address with 400", async () => {
    const grant = await makeAgentGrant(api);
    const other = await makeAgentGrant(api);
    for (const from of [
      [{ email: 'someone@example.net' }],
      [{ email: other.email }],
      [{ email: grant.email }, { email: 'alias@example.net' }],
    ]) {
      expectError(
        await api.post(`/v3/grants/${grant.id}/drafts`, { from, subject: 'x' }),
        400,
        'invalid_request_error',
        "'from'",
        grant.email,
      );
    }
    // The address is compared case-insensitively.
    const upper = await createDraft(api, grant.id, { from: [{ email: grant.email.toUpperCase() }] });
    expect(upper.from).toEqual([{ email: grant.email }]);
    expect(await draftsFolderCount(grant.id)).toBe(1);
  });

  it.each([
    [{ colour: 'red' }, "unknown field 'colour'"],
    [{ to: [{ email: 'not-an-email' }] }, "'to[0].email' must be a valid email address"],
    [{ to: [{ name: 'No address' }] }, "'to[0].email' is required"],
    [{ subject: 5 }, "'subject' must be of type string"],
    [{ starred: 'yes' }, "'starred' must be of type boolean"],
    [{ metadata: { key1: 7 } }, "'metadata.key1' must be of type string"],
    [{ attachments: [{ filename: 'a.txt' }] }, "'attachments[0].content' is required"],
    [{ attachments: [{ filename: 'a.txt', content: '!!not base64!!' }] }, "'attachments[0].content' must be base64"],
    [{ custom_headers: [{ name: 'Subject', value: 'spoof' }] }, "'custom_headers' cannot set 'Subject'"],
    [
      { custom_headers: [{ name: 'X-Bad', value: 'a\r\nBcc: x@y.z' }] },
      "'custom_headers[0].value' must match the pattern",
    ],
    [{ tracking_options: { colour: 'red' } }, "unknown field 'tracking_options.colour'"],
    [{ template: { variables: {} } }, "'template.id' is required"],
  ])('rejects %j with 400 naming the field', async (body, message) => {
    const grant = await makeAgentGrant(api);
    expectError(await api.post(`/v3/grants/${grant.id}/drafts`, body), 400, 'invalid_request_error', message);
    expect(await draftsFolderCount(grant.id)).toBe(0);
  });

  it('refuses select on create', async () => {
    const grant = await makeAgentGrant(api);
    expectError(
      await api.post(`/v3/grants/${grant.id}/drafts?select=id`, { subject: 'x' }),
      400,
      'invalid_request_error',
      'select',
    );
  });

  it('answers 413 for a JSON body over 3 MB, pointing to multipart/form-data', async () => {
    const grant = await makeAgentGrant(api);
    const content = Buffer.alloc(2_400_000, 7).toString('base64'); // 3.2 MB of base64
    const response = await api.post(`/v3/grants/${grant.id}/drafts`, {
      subject: 'Big',
      attachments: [{ filename: 'big.bin', content }],
    });
    expectError(response, 413, 'payload_too_large', 'multipart/form-data');
    expect(await draftsFolderCount(grant.id)).toBe(0);
  });

  it('answers 415 for a body that is neither JSON nor multipart', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.request('POST', `/v3/grants/${grant.id}/drafts`, {
      rawBody: 'subject=x',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expectError(response, 415, 'unsupported_media_type_error', 'multipart/form-data');
  });
});

describe('POST /v3/grants/{grant_id}/drafts (multipart/form-data)', () => {
  it("takes the JSON from the 'message' part and each file part as an attachment", async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const form = new FormData();
    form.append(
      'message',
      JSON.stringify({ subject: 'With files', to: [{ email: 'x@example.net' }], metadata: { key2: 'multi' } }),
    );
    form.append('file', new Blob([Buffer.from('%PDF-1.4 fake')], { type: 'application/pdf' }), 'report.pdf');
    form.append('file', new Blob(['second file'], { type: 'text/plain' }), 'notes.txt');

    // Act
    const response = await sendForm('POST', `/v3/grants/${grant.id}/drafts`, form);

    // Assess
    expect(response.status, response.text).toBe(200);
    const draft = response.body.data as Draft;
    expect(draft).toMatchObject({
      object: 'draft',
      subject: 'With files',
      to: [{ email: 'x@example.net' }],
      metadata: { key2: 'multi' },
    });
    expect(
      draft.attachments.map(({ filename, content_type, size, is_inline }) => ({
        filename,
        content_type,
        size,
        is_inline,
      })),
    ).toEqual([
      { filename: 'report.pdf', content_type: 'application/pdf', size: 13, is_inline: false },
      { filename: 'notes.txt', content_type: 'text/plain', size: 11, is_inline: false },
    ]);
    expect((await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`)).body.data.attachments).toEqual(
      draft.attachments,
    );
  });

  it("takes the JSON from a 'draft' part too, as the published contract names it", async () => {
    const grant = await makeAgentGrant(api);
    const form = new FormData();
    form.append('draft', JSON.stringify({ subject: 'Named draft' }));
    form.append('file', new Blob(['x'], { type: 'text/plain' }), 'x.txt');
    const response = await sendForm('POST', `/v3/grants/${grant.id}/drafts`, form);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toMatchObject({ subject: 'Named draft', attachments: [{ filename: 'x.txt' }] });
  });

  it('keeps non-ASCII text of the message part and of file names', async () => {
    const grant = await makeAgentGrant(api);
    const form = new FormData();
    form.append('message', JSON.stringify({ subject: 'Grüße aus Köln ✓', body: '<p>Straße</p>' }));
    form.append('file', new Blob(['contenu'], { type: 'text/plain' }), 'résumé 2024.txt');
    const response = await sendForm('POST', `/v3/grants/${grant.id}/drafts`, form);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toMatchObject({ subject: 'Grüße aus Köln ✓', body: '<p>Straße</p>' });
    expect(response.body.data.attachments).toMatchObject([
      { filename: 'résumé 2024.txt', content_type: 'text/plain', size: 7 },
    ]);
  });

  it('accepts attachments above the 3 MB JSON limit', async () => {
    const grant = await makeAgentGrant(api);
    const form = new FormData();
    form.append('message', JSON.stringify({ subject: 'Large' }));
    form.append('file', new Blob([Buffer.alloc(3_500_000, 1)], { type: 'application/octet-stream' }), 'large.bin');
    const response = await sendForm('POST', `/v3/grants/${grant.id}/drafts`, form);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.attachments).toMatchObject([{ filename: 'large.bin', size: 3_500_000 }]);
  });

  it("validates the 'message' part like a JSON body", async () => {
    const grant = await makeAgentGrant(api);
    const unknown = new FormData();
    unknown.append('message', JSON.stringify({ colour: 'red' }));
    expectError(
      await sendForm('POST', `/v3/grants/${grant.id}/drafts`, unknown),
      400,
      'invalid_request_error',
      "unknown field 'colour'",
    );
    const malformed = new FormData();
    malformed.append('message', '{not json');
    expectError(
      await sendForm('POST', `/v3/grants/${grant.id}/drafts`, malformed),
      400,
      'invalid_request_error',
      'not valid JSON',
    );
    const stray = new FormData();
    stray.append('message', '{}');
    stray.append('subject', 'text field');
    expectError(
      await sendForm('POST', `/v3/grants/${grant.id}/drafts`, stray),
      400,
      'invalid_request_error',
      "'subject'",
    );
    expect(await draftsFolderCount(grant.id)).toBe(0);
  });
});

describe('GET /v3/grants/{grant_id}/drafts/{draft_id}', () => {
  it('projects top-level fields with select', async () => {
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, { subject: 'Selected', starred: true });
    const response = await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}?select=id,subject,starred`);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual({ id: draft.id, subject: 'Selected', starred: true });
    expectError(
      await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}?select=id,colour`),
      400,
      'invalid_request_error',
      'colour',
    );
  });

  it('answers a clean 404 envelope for IDs with special characters, and finds URL-encoded real IDs', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, { subject: 'Encoded' });

    // Act / Assess
    for (const id of [
      'drf%23bad',
      encodeURIComponent('drf#bad?x=1'),
      'drf%3Fq',
      encodeURIComponent(`${draft.id}#`),
      'drf%25',
      UNKNOWN_DRAFT_ID,
    ]) {
      const response = await api.get(`/v3/grants/${grant.id}/drafts/${id}`);
      expect({ id, status: response.status }).toEqual({ id, status: 404 });
      expectError(response, 404, 'not_found_error');
    }
    expectError(
      await api.get(`/v3/grants/${grant.id}/drafts/drf%23bad`),
      404,
      'not_found_error',
      "Draft 'drf#bad' not found",
    );
    for (const id of [
      encodeURIComponent(draft.id),
      draft.id.replace('_', '%5F'),
      draft.id.replace('drf', '%64%72%66'),
    ]) {
      const response = await api.get(`/v3/grants/${grant.id}/drafts/${id}`);
      expect({ id, status: response.status, found: response.body?.data?.id }).toEqual({
        id,
        status: 200,
        found: draft.id,
      });
    }
    const encodedPut = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id.replace('_', '%5F')}`, {
      subject: 'Via encoded ID',
    });
    expect(encodedPut.status, encodedPut.text).toBe(200);
    expect(encodedPut.body.data.subject).toBe('Via encoded ID');
  });

  it("answers 404 for drafts of another grant and for another application's grant", async () => {
    const owner = await makeAgentGrant(api);
    const sibling = await makeAgentGrant(api);
    const draft = await createDraft(api, owner.id, { subject: 'Mine' });
    const other = apiClient(gateway.url, (await makeApplication('other')).apiKey);
    const otherGrant = await makeAgentGrant(other);
    expectError(await api.get(`/v3/grants/${sibling.id}/drafts/${draft.id}`), 404, 'not_found_error', draft.id);
    expectError(await other.get(`/v3/grants/${owner.id}/drafts/${draft.id}`), 404, 'not_found_error');
    expectError(await other.get(`/v3/grants/${otherGrant.id}/drafts/${draft.id}`), 404, 'not_found_error', draft.id);
    expect((await api.get(`/v3/grants/${owner.id}/drafts/${draft.id}`)).status).toBe(200);
  });
});

describe('PUT /v3/grants/{grant_id}/drafts/{draft_id}', () => {
  it('updates the fields sent and keeps the others', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, {
      to: [{ email: 'to@example.net' }],
      cc: [{ email: 'cc@example.net' }],
      subject: 'Before',
      body: '<p>Body before</p>',
      starred: true,
      metadata: { key1: 'a', key2: 'b' },
      attachments: [{ filename: 'keep.txt', content_type: 'text/plain', content: base64('keep') }],
      custom_headers: [{ name: 'X-Keep', value: 'yes' }],
      is_plaintext: false,
    });

    // Act
    const response = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, {
      subject: 'After',
      bcc: [{ email: 'bcc@example.net' }],
    });

    // Assess
    expect(response.status, response.text).toBe(200);
    const updated = response.body.data as Draft;
    expect(updated).toEqual({
      ...draft,
      subject: 'After',
      bcc: [{ email: 'bcc@example.net' }],
      date: updated.updated_at,
      updated_at: expect.any(Number),
    });
    expect(updated.updated_at).toBeGreaterThanOrEqual(draft.updated_at as number);
    expect((await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`)).body.data).toEqual(updated);
  });

  it('replaces metadata as a whole and the attachment list when attachments are given', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, {
      subject: 'Replace',
      metadata: { key1: 'a', key2: 'b' },
      attachments: [
        { filename: 'one.txt', content_type: 'text/plain', content: base64('one') },
        { filename: 'two.txt', content_type: 'text/plain', content: base64('two') },
      ],
    });

    // Act
    const metadata = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { metadata: { key3: 'c' } });
    const attachments = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, {
      attachments: [{ filename: 'three.txt', content_type: 'text/plain', content: base64('three!') }],
    });
    const untouched = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { starred: true });
    const cleared = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { attachments: [] });

    // Assess
    expect(metadata.status, metadata.text).toBe(200);
    expect(metadata.body.data.metadata).toEqual({ key3: 'c' });
    expect(metadata.body.data.attachments).toEqual(draft.attachments);
    expect(attachments.body.data.attachments).toMatchObject([
      { filename: 'three.txt', content_type: 'text/plain', size: 6 },
    ]);
    expect(attachments.body.data.attachments).toHaveLength(1);
    expect(attachments.body.data.metadata).toEqual({ key3: 'c' });
    expect(untouched.body.data.attachments).toEqual(attachments.body.data.attachments);
    expect(untouched.body.data.starred).toBe(true);
    expect(cleared.body.data.attachments).toEqual([]);
    expect((await api.get(`/v3/grants/${grant.id}/drafts?has_attachment=true`)).body.data).toEqual([]);
  });

  it('replaces the attachments with the files of a multipart update', async () => {
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, {
      subject: 'Multi',
      attachments: [{ filename: 'old.txt', content: base64('old') }],
    });
    const form = new FormData();
    form.append('message', JSON.stringify({ subject: 'Multi updated' }));
    form.append('file', new Blob(['fresh content'], { type: 'text/plain' }), 'new.txt');
    const response = await sendForm('PUT', `/v3/grants/${grant.id}/drafts/${draft.id}`, form);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.subject).toBe('Multi updated');
    expect(response.body.data.attachments.map((a: Draft['attachments'][number]) => [a.filename, a.size])).toEqual([
      ['new.txt', 13],
    ]);
  });

  it.each([
    ['is_plaintext', true],
    ['reply_to_message_id', 'msg_01jzzzzzzzzzzzzzzzzzzzzzzz'],
    ['custom_headers', [{ name: 'X-Later', value: '1' }]],
    ['signature_id', 'sig_01jzzzzzzzzzzzzzzzzzzzzzzz'],
  ])('rejects the create-only field %s with 400, changing nothing', async (field, value) => {
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, { subject: 'Create only' });
    const response = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { subject: 'Changed', [field]: value });
    expectError(response, 400, 'invalid_request_error', `'${field}'`);
    expect((await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`)).body.data).toEqual(draft);
  });

  it("refuses a 'from' other than the grant's address, an empty body and unknown drafts", async () => {
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, { subject: 'From' });
    expectError(
      await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { from: [{ email: 'spoof@example.net' }] }),
      400,
      'invalid_request_error',
      "'from'",
    );
    expectError(
      await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, {}),
      400,
      'invalid_request_error',
      'at least one field',
    );
    expectError(
      await api.put(`/v3/grants/${grant.id}/drafts/${UNKNOWN_DRAFT_ID}`, { subject: 'x' }),
      404,
      'not_found_error',
    );
    const named = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, {
      from: [{ email: grant.email, name: 'Named' }],
    });
    expect(named.body.data.from).toEqual([{ email: grant.email, name: 'Named' }]);
  });

  it('clears lists and metadata given empty', async () => {
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, {
      to: [{ email: 'to@example.net' }],
      cc: [{ email: 'cc@example.net' }],
      metadata: { key1: 'x' },
    });
    const response = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { to: [], metadata: {} });
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toMatchObject({ to: [], cc: [{ email: 'cc@example.net' }], metadata: {} });
  });

  it('keeps bodies larger than a database item whole, through create, update and send', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const outside = outsideAddress('large');
    const large = `<p>${'Lorem ipsum dolor sit amet. '.repeat(4000)}</p>`; // ~112 KB
    const larger = `<p>${'Consectetur adipiscing elit. '.repeat(5000)}</p>`;

    // Act / Assess
    const draft = await createDraft(api, grant.id, { to: [{ email: outside }], subject: 'Large body', body: large });
    expect(draft.body).toBe(large);
    expect((await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`)).body.data.body).toBe(large);
    expect((await api.get(`/v3/grants/${grant.id}/drafts`)).body.data[0].body).toBe(large);
    expect(
      (await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { subject: 'Large body, renamed' })).body.data.body,
    ).toBe(large);
    expect((await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { body: '<p>small</p>' })).body.data.body).toBe(
      '<p>small</p>',
    );
    expect((await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`)).body.data.body).toBe('<p>small</p>');
    expect((await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { body: larger })).body.data.body).toBe(larger);
    expect((await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`)).body.data.body).toBe(larger);
    const sent = await api.request('POST', `/v3/grants/${grant.id}/drafts/${draft.id}`);
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.data.body).toBe(larger);
    expect(await waitForSunk(outside)).toHaveLength(1);
  });

  it('projects the answer with select', async () => {
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, { subject: 'S' });
    const response = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}?select=id,subject`, { subject: 'T' });
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual({ id: draft.id, subject: 'T' });
  });

  it('keeps a large body (stored in S3) consistent under concurrent updates, and removes replaced bodies', async () => {
    const grant = await makeAgentGrant(api);
    const large = (tag: string) => `<p>${tag}</p>${'x'.repeat(70 * 1024)}`;
    // Another draft's body stays in the same S3 "directory" throughout: the S3 emulator (s3rver)
    // removes a directory that a delete leaves empty, which races with a concurrent upload into it
    // (S3 itself has no directories).
    await createDraft(api, grant.id, { subject: 'Neighbour', body: large('other') });
    const draft = await createDraft(api, grant.id, { subject: 'Large', body: large('v1') });
    // Five updates race; whichever wins, the stored body is the winner's, never a loser's.
    const bodies = ['a', 'b', 'c', 'd', 'e'].map(large);
    const responses = await Promise.all(
      bodies.map((body) => api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { body })),
    );
    expect(
      responses.every((r) => r.status === 200 || r.status === 409),
      responses.map((r) => r.status).join(),
    ).toBe(true);
    const accepted = responses.filter((r) => r.status === 200).map((r) => r.body.data.body as string);
    expect(accepted.length).toBeGreaterThan(0);
    const stored = (await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`)).body.data.body as string;
    expect(accepted).toContain(stored);
    // Replaced bodies are removed by the jobs committed with each update; bodies of updates that lost
    // (409) were never committed and go when their upload records expire. Then only the current
    // body is left in S3 (with the neighbour's, two objects under the grant's bodies).
    await jobsDone();
    expect(await expireUploads([grant.id])).toBe(responses.filter((r) => r.status === 409).length);
    const s3 = new S3Client({ forcePathStyle: true });
    try {
      const listed = await s3.send(
        new ListObjectsV2Command({ Bucket: process.env.MAIL_BUCKET, Prefix: `grants/${grant.id}/bodies/` }),
      );
      expect(listed.KeyCount).toBe(2);
    } finally {
      s3.destroy();
    }
  });
});

describe('tracking_options on drafts', () => {
  it('applies the six hostname rules across create and updates', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const path = (id: string) => `/v3/grants/${grant.id}/drafts/${id}`;

    // Rule 1: an explicit hostname is validated and stored canonical.
    const draft = await createDraft(api, grant.id, {
      subject: 'Tracked',
      tracking_options: { links: true, label: 'campaign', domain_name: 'Track.Example.COM.' },
    });
    expect(draft.tracking_options).toEqual({
      opens: false,
      links: true,
      thread_replies: false,
      label: 'campaign',
      domain_name: 'track.example.com',
    });

    // Rule 3: an explicit hostname on update replaces it.
    const replaced = await api.put(path(draft.id), { tracking_options: { domain_name: 'Links.Example.ORG' } });
    expect(replaced.status, replaced.text).toBe(200);
    expect(replaced.body.data.tracking_options).toEqual({
      opens: false,
      links: true,
      thread_replies: false,
      label: 'campaign',
      domain_name: 'links.example.org',
    });

    // Rule 4: other options change, the hostname stays.
    const opens = await api.put(path(draft.id), { tracking_options: { opens: true } });
    expect(opens.body.data.tracking_options).toEqual({
      opens: true,
      links: true,
      thread_replies: false,
      label: 'campaign',
      domain_name: 'links.example.org',
    });
    const linksOnly = await api.put(path(draft.id), { tracking_options: { links: false } });
    expect(linksOnly.body.data.tracking_options).toEqual({
      opens: true,
      links: false,
      thread_replies: false,
      label: 'campaign',
      domain_name: 'links.example.org',
    });
    // Updating other fields leaves tracking alone.
    expect((await api.put(path(draft.id), { subject: 'Still tracked' })).body.data.tracking_options.domain_name).toBe(
      'links.example.org',
    );

    // Rule 5: both off, the hostname is cleared.
    const off = await api.put(path(draft.id), { tracking_options: { opens: false, links: false } });
    expect(off.body.data.tracking_options).toEqual({
      opens: false,
      links: false,
      thread_replies: false,
      label: 'campaign',
    });
    expect(off.body.data.tracking_options).not.toHaveProperty('domain_name');
    expect((await api.get(path(draft.id))).body.data.tracking_options).not.toHaveProperty('domain_name');

    // Rule 6: switched on again without a hostname, the regional one.
    const again = await api.put(path(draft.id), { tracking_options: { links: true } });
    expect(again.body.data.tracking_options).toEqual({
      opens: false,
      links: true,
      thread_replies: false,
      label: 'campaign',
      domain_name: REGIONAL_HOSTNAME,
    });
    expect((await api.get(path(draft.id))).body.data.tracking_options.domain_name).toBe(REGIONAL_HOSTNAME);
  });

  it('uses the regional hostname on create without one (rule 2), and none when nothing is tracked', async () => {
    const grant = await makeAgentGrant(api);
    const opens = await createDraft(api, grant.id, { tracking_options: { opens: true } });
    expect(opens.tracking_options).toEqual({
      opens: true,
      links: false,
      thread_replies: false,
      domain_name: REGIONAL_HOSTNAME,
    });
    const nothing = await createDraft(api, grant.id, {
      tracking_options: { thread_replies: true, domain_name: 'track.example.com' },
    });
    expect(nothing.tracking_options).toEqual({ opens: false, links: false, thread_replies: true });
    const none = await createDraft(api, grant.id, { subject: 'untracked' });
    expect(none.tracking_options).toEqual({ opens: false, links: false, thread_replies: false });
  });

  it('validates a hostname even when nothing is tracked and it would be dropped', async () => {
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, { subject: 'x' });
    expectError(
      await api.post(`/v3/grants/${grant.id}/drafts`, { tracking_options: { domain_name: 'a..com' } }),
      400,
      'invalid_request_error',
      'tracking_options.domain_name',
    );
    expectError(
      await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, {
        tracking_options: { opens: false, links: false, domain_name: 'http://a.com' },
      }),
      400,
      'invalid_request_error',
      'tracking_options.domain_name',
    );
    expect(await draftsFolderCount(grant.id)).toBe(1);
  });

  it('canonicalises internationalised hostnames to A-labels', async () => {
    const grant = await makeAgentGrant(api);
    const draft = await createDraft(api, grant.id, {
      tracking_options: { opens: true, domain_name: 'bücher.example' },
    });
    expect(draft.tracking_options.domain_name).toBe('xn--bcher-kva.example');
    const updated = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, {
      tracking_options: { domain_name: 'Track.Bücher.Example' },
    });
    expect(updated.body.data.tracking_options.domain_name).toBe('track.xn--bcher-kva.example');
  });

  it.each([
    'a..com',
    'http://a.com',
    '10.0.0.1',
    `${'a'.repeat(64)}.example.com`,
    'track.example.com:8080',
    'localhost',
    '-track.example.com',
    'track_1.example.com',
    '*.example.com',
    'track.example.com/path',
    'user@track.example.com',
    '[::1]',
    'track.example.123',
    ' ',
  ])(
    'refuses the hostname %j with 400 naming tracking_options.domain_name, at create and at update',
    async (hostname) => {
      // Prepare
      const grant = await makeAgentGrant(api);
      const draft = await createDraft(api, grant.id, {
        tracking_options: { opens: true, domain_name: 'track.example.com' },
      });

      // Act
      const created = await api.post(`/v3/grants/${grant.id}/drafts`, {
        tracking_options: { opens: true, domain_name: hostname },
      });
      const updated = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, {
        tracking_options: { domain_name: hostname },
      });

      // Assess
      expectError(created, 400, 'invalid_request_error', 'tracking_options.domain_name');
      expectError(updated, 400, 'invalid_request_error', 'tracking_options.domain_name');
      expect((await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`)).body.data.tracking_options.domain_name).toBe(
        'track.example.com',
      );
      expect(await draftsFolderCount(grant.id)).toBe(1);
    },
  );
});

describe('templates in drafts', () => {
  it('renders the template into subject and body; an explicit subject wins', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(grant.id, {
      name: 'Invite',
      engine: 'mustache',
      subject: 'Invitation for {{name}}',
      body: '<p>Dear {{name}}, join us in {{city}}</p>',
    });
    const variables = { name: 'Ann & Co', city: 'Oslo' };

    // Act
    const rendered = await createDraft(api, grant.id, { template: { id: template.id, variables } });
    const overridden = await createDraft(api, grant.id, {
      subject: 'My own subject',
      template: { id: template.id, variables },
    });

    // Assess
    expect(rendered).toMatchObject({
      subject: 'Invitation for Ann & Co',
      body: '<p>Dear Ann &amp; Co, join us in Oslo</p>',
      template: { id: template.id, variables },
    });
    expect(overridden).toMatchObject({ subject: 'My own subject', body: '<p>Dear Ann &amp; Co, join us in Oslo</p>' });
  });

  it('re-renders on update, keeping an explicit body', async () => {
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(grant.id, {
      name: 'Hb',
      engine: 'handlebars',
      subject: 'Hello {{who}}',
      body: '<p>Body for {{who}}</p>',
    });
    const draft = await createDraft(api, grant.id, { subject: 'Plain draft', body: '<p>Old</p>' });
    const response = await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, {
      body: '<p>Kept body</p>',
      template: { id: template.id, variables: { who: 'Bob' } },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toMatchObject({
      subject: 'Hello Bob',
      body: '<p>Kept body</p>',
      template: { id: template.id, variables: { who: 'Bob' } },
    });
  });

  it('answers 404 for a template of another grant', async () => {
    const owner = await makeAgentGrant(api);
    const grant = await makeAgentGrant(api);
    const template = await createTemplate(owner.id, { name: 'Private', engine: 'twig', body: 'x' });
    expectError(
      await api.post(`/v3/grants/${grant.id}/drafts`, { template: { id: template.id } }),
      404,
      'not_found_error',
      template.id,
    );
    expect(await draftsFolderCount(grant.id)).toBe(0);
  });
});

describe('POST /v3/grants/{grant_id}/drafts/{draft_id} (send)', () => {
  it('sends the draft with its stored signature to an outside address, then deletes it', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const outside = outsideAddress();
    const signature = await createSignature(grant.id, '<p>Kind regards, Ann Sigtest</p>');
    const draft = await createDraft(api, grant.id, {
      to: [{ email: outside, name: 'Outside Person' }],
      subject: 'Draft to send',
      body: '<p>Please review</p>',
      signature_id: signature.id,
      custom_headers: [{ name: 'X-Campaign', value: 'draft-send' }],
      attachments: [{ filename: 'agenda.txt', content_type: 'text/plain', content: base64('1. review') }],
      metadata: { key1: 'sent-draft' },
    });
    expect(await draftsFolderCount(grant.id)).toBe(1);

    // Act
    const response = await api.request('POST', `/v3/grants/${grant.id}/drafts/${draft.id}`);

    // Assess: the answer is the sent message.
    expect(response.status, response.text).toBe(200);
    const message = response.body.data;
    expect(message).toMatchObject({
      object: 'message',
      grant_id: grant.id,
      subject: 'Draft to send',
      from: [{ email: grant.email }],
      to: [{ email: outside, name: 'Outside Person' }],
      folders: ['sent'],
      body: '<p>Please review</p><br><br><p>Kind regards, Ann Sigtest</p>',
      metadata: { key1: 'sent-draft' },
    });
    expect(message.id).toMatch(/^msg_/);
    expect(message.attachments).toMatchObject([{ filename: 'agenda.txt', size: 9 }]);

    // It reached the outside address, signature at the end, with the custom header and the attachment.
    const sunk = await waitForSunk(outside);
    expect(sunk).toHaveLength(1);
    expect(sunk[0]!.subject).toBe('Draft to send');
    const raw = await sunkRaw(sunk[0]!.id);
    // Both present, the body before the signature (also in first occurrences).
    expect(raw).toMatch(/Please review[\s\S]*Kind regards, Ann Sigtest/);
    expect(raw.indexOf('Please review')).toBeLessThan(raw.indexOf('Kind regards, Ann Sigtest'));
    expect(raw).toContain('X-Campaign: draft-send');
    expect(raw).toContain('agenda.txt');

    // The Sent copy holds the signed body; the draft is gone and the Drafts count went back down.
    const sent = await api.get(`/v3/grants/${grant.id}/messages?in=sent`);
    expect(sent.body.data.map((m: { id: string; body: string }) => [m.id, m.body])).toEqual([
      [message.id, '<p>Please review</p><br><br><p>Kind regards, Ann Sigtest</p>'],
    ]);
    expectError(await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`), 404, 'not_found_error');
    expect((await api.get(`/v3/grants/${grant.id}/drafts`)).body.data).toEqual([]);
    expect(await draftsFolderCount(grant.id)).toBe(0);
    expectError(await api.request('POST', `/v3/grants/${grant.id}/drafts/${draft.id}`), 404, 'not_found_error');
    expect(await waitForSunk(outside, 300)).toHaveLength(1);

    // The Sent copy keeps its own attachment contents after the draft's were deleted.
    const download = await fetch(
      `${gateway.url}/v3/grants/${grant.id}/attachments/${message.attachments[0].id}/download?message_id=${message.id}`,
      {
        headers: { authorization: `Bearer ${apiKey}` },
      },
    );
    expect(download.status).toBe(200);
    expect(await download.text()).toBe('1. review');
  });

  it('sends a draft once when two send requests race', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const outside = outsideAddress('race');
    const draft = await createDraft(api, grant.id, {
      to: [{ email: outside }],
      subject: 'Only once',
      body: '<p>once</p>',
    });

    // Act
    const answers = await Promise.all(
      [1, 2].map(() => api.request('POST', `/v3/grants/${grant.id}/drafts/${draft.id}`)),
    );

    // Assess: a sentinel mail, sent through the same relay after both answers, has arrived.
    await waitForSunk(outside);
    const sentinel = outsideAddress('race-sentinel');
    const sentinelDraft = await createDraft(api, grant.id, {
      to: [{ email: sentinel }],
      subject: 'Sentinel',
      body: '<p>after</p>',
    });
    expect((await api.request('POST', `/v3/grants/${grant.id}/drafts/${sentinelDraft.id}`)).status).toBe(200);
    expect(await waitForSunk(sentinel)).toHaveLength(1);
    expect({
      statuses: answers.map((a) => a.status).sort(),
      delivered: (await waitForSunk(outside)).length,
      sentCopies: (await api.get(`/v3/grants/${grant.id}/messages?in=sent`)).body.data.filter(
        (m: { subject: string }) => m.subject === 'Only once',
      ).length,
      draftsCount: await draftsFolderCount(grant.id),
    }).toEqual({ statuses: [200, 404], delivered: 1, sentCopies: 1, draftsCount: 0 });
  });

  it('delivers to cc and bcc without writing a Bcc header', async () => {
    const grant = await makeAgentGrant(api);
    const [to, cc, bcc] = [outsideAddress('to'), outsideAddress('cc'), outsideAddress('bcc')];
    const draft = await createDraft(api, grant.id, {
      to: [{ email: to }],
      cc: [{ email: cc }],
      bcc: [{ email: bcc }],
      subject: 'Copies',
      body: '<p>c</p>',
    });
    const response = await api.request('POST', `/v3/grants/${grant.id}/drafts/${draft.id}`);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.bcc).toEqual([{ email: bcc }]);
    const sunk = await waitForSunk(bcc);
    expect(sunk).toHaveLength(1);
    expect(sunk[0]!.recipients.sort()).toEqual([to, cc, bcc].sort());
    const raw = await sunkRaw(sunk[0]!.id);
    expect(raw).toContain(cc);
    expect(raw).not.toContain(bcc);
    expect(raw).not.toMatch(/^bcc:/im);
  });

  it('appends the signature given in the send request', async () => {
    const grant = await makeAgentGrant(api);
    const outside = outsideAddress();
    const signature = await createSignature(grant.id, '<p>Sent with SendSig</p>');
    const draft = await createDraft(api, grant.id, {
      to: [{ email: outside }],
      subject: 'Signed at send',
      body: '<p>Main text</p>',
    });

    const response = await api.post(`/v3/grants/${grant.id}/drafts/${draft.id}`, { signature_id: signature.id });

    expect(response.status, response.text).toBe(200);
    expect(response.body.data.body).toBe('<p>Main text</p><br><br><p>Sent with SendSig</p>');
    const sunk = await waitForSunk(outside);
    expect(sunk).toHaveLength(1);
    expect(await sunkRaw(sunk[0]!.id)).toContain('Sent with SendSig');
    expect(await draftsFolderCount(grant.id)).toBe(0);
  });

  it('appends one signature only: the one of the send request wins over the stored one', async () => {
    const grant = await makeAgentGrant(api);
    const outside = outsideAddress();
    const stored = await createSignature(grant.id, '<p>Stored StoredSig</p>');
    const chosen = await createSignature(grant.id, '<p>Chosen ChosenSig</p>');
    const draft = await createDraft(api, grant.id, {
      to: [{ email: outside }],
      subject: 'One signature',
      body: '<p>Text</p>',
      signature_id: stored.id,
    });
    const response = await api.post(`/v3/grants/${grant.id}/drafts/${draft.id}`, { signature_id: chosen.id });
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.body).toBe('<p>Text</p><br><br><p>Chosen ChosenSig</p>');
    const raw = await sunkRaw((await waitForSunk(outside))[0]!.id);
    expect(raw).toContain('ChosenSig');
    expect(raw).not.toContain('StoredSig');
  });

  it('appends the signature after a blank line in a plain-text draft', async () => {
    const grant = await makeAgentGrant(api);
    const outside = outsideAddress();
    const signature = await createSignature(grant.id, '-- PlainSig');
    const draft = await createDraft(api, grant.id, {
      to: [{ email: outside }],
      subject: 'Plain text',
      body: 'Hello there',
      is_plaintext: true,
      signature_id: signature.id,
    });
    const response = await api.request('POST', `/v3/grants/${grant.id}/drafts/${draft.id}`);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.body).toBe('Hello there\n\n-- PlainSig');
    const raw = await sunkRaw((await waitForSunk(outside))[0]!.id);
    expect(raw).toMatch(/Content-Type: text\/plain/i);
    expect(raw).toContain('-- PlainSig');
  });

  it('sends a reply draft in the thread of the original message', async () => {
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const original = await receivedMessage(a, b, 'Thread start');
    const draft = await createDraft(api, b.id, {
      reply_to_message_id: original.id,
      to: [{ email: a.email }],
      subject: 'Re: Thread start',
      body: '<p>Reply</p>',
    });
    const response = await api.request('POST', `/v3/grants/${b.id}/drafts/${draft.id}`);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.thread_id).toBe(original.thread_id);
    const thread = await api.get(`/v3/grants/${b.id}/threads/${original.thread_id}`);
    expect(thread.body.data.message_ids).toEqual(expect.arrayContaining([original.id, response.body.data.id]));
    expect(thread.body.data.draft_ids).toEqual([]);
    await jobsDone();
    const inboxOfA = await api.get(`/v3/grants/${a.id}/messages?in=inbox`);
    expect(inboxOfA.body.data.map((m: { subject: string }) => m.subject)).toEqual(['Re: Thread start']);
  });

  it('keeps the draft when it cannot be sent', async () => {
    const grant = await makeAgentGrant(api);
    const noRecipient = await createDraft(api, grant.id, { subject: 'Nobody' });
    expectError(
      await api.request('POST', `/v3/grants/${grant.id}/drafts/${noRecipient.id}`),
      400,
      'invalid_request_error',
      'recipient',
    );
    const unknownSignature = await createDraft(api, grant.id, {
      to: [{ email: outsideAddress() }],
      subject: 'Bad signature',
    });
    expectError(
      await api.post(`/v3/grants/${grant.id}/drafts/${unknownSignature.id}`, {
        signature_id: 'sig_01jzzzzzzzzzzzzzzzzzzzzzzz',
      }),
      404,
      'not_found_error',
    );
    expectError(
      await api.post(`/v3/grants/${grant.id}/drafts/${unknownSignature.id}`, { colour: 'red' }),
      400,
      'invalid_request_error',
      "unknown field 'colour'",
    );
    expect((await api.get(`/v3/grants/${grant.id}/drafts`)).body.data.map((d: Draft) => d.id)).toEqual([
      unknownSignature.id,
      noRecipient.id,
    ]);
    expect(await draftsFolderCount(grant.id)).toBe(2);
    expect((await api.get(`/v3/grants/${grant.id}/messages?in=sent`)).body.data).toEqual([]);
  });
});

describe('GET /v3/grants/{grant_id}/drafts', () => {
  it('filters by metadata_pair', async () => {
    const grant = await makeAgentGrant(api);
    const tagged = await createDraft(api, grant.id, { subject: 'tagged', metadata: { key1: 'campaign-7' } });
    await createDraft(api, grant.id, { subject: 'other', metadata: { key1: 'campaign-8' } });
    await createDraft(api, grant.id, { subject: 'plain' });
    const found = await api.get(`/v3/grants/${grant.id}/drafts?metadata_pair=key1:campaign-7`);
    expect(found.status, found.text).toBe(200);
    expect(found.body.data.map((d: Draft) => d.id)).toEqual([tagged.id]);
    const bad = await api.get(`/v3/grants/${grant.id}/drafts?metadata_pair=colour:red`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain("'metadata_pair' must be '<key>:<value>'");
  });

  it('lists newest first and pages with limit and next_cursor', async () => {
    const grant = await makeAgentGrant(api);
    const created = [];
    for (const subject of ['one', 'two', 'three']) created.push(await createDraft(api, grant.id, { subject }));
    const newestFirst = created.map((d) => d.id).reverse();

    const all = await api.get(`/v3/grants/${grant.id}/drafts`);
    expect(all.status, all.text).toBe(200);
    expect(all.body.data.map((d: Draft) => d.id)).toEqual(newestFirst);
    expect(all.body).not.toHaveProperty('next_cursor');
    expect(all.body.data[0]).toEqual(created[2]);

    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await api.get(
        `/v3/grants/${grant.id}/drafts?limit=1${cursor ? `&page_token=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.status, page.text).toBe(200);
      pages.push(page.body.data.map((d: Draft) => d.id));
      cursor = page.body.next_cursor;
    } while (cursor && pages.length < 10);
    expect(pages).toEqual(newestFirst.map((id) => [id]));

    expect((await api.get(`/v3/grants/${grant.id}/drafts?select=id,subject&limit=1`)).body.data).toEqual([
      { id: newestFirst[0], subject: 'three' },
    ]);
  });

  it('filters by subject (whole keyword, any case), to, any_email, starred and has_attachment', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const report = await createDraft(api, grant.id, {
      subject: 'Quarterly REPORT draft',
      to: [{ email: 'boss@example.net' }],
      starred: true,
      attachments: [{ filename: 'r.txt', content: base64('r') }],
    });
    const reporting = await createDraft(api, grant.id, {
      subject: 'Reporting lunch',
      to: [{ email: 'team@example.net' }],
      cc: [{ email: 'boss@example.net' }],
    });
    const other = await createDraft(api, grant.id, {
      subject: 'Report: budget',
      bcc: [{ email: 'audit@example.net' }],
    });
    const ids = async (query: string) => {
      const response = await api.get(`/v3/grants/${grant.id}/drafts?${query}`);
      expect(response.status, response.text).toBe(200);
      return response.body.data.map((d: Draft) => d.id);
    };

    // Act / Assess
    expect(await ids('subject=report')).toEqual([other.id, report.id]);
    expect(await ids('subject=Quarterly%20report')).toEqual([report.id]);
    expect(await ids('subject=repo')).toEqual([]);
    expect(await ids('to=boss@example.net')).toEqual([report.id]);
    expect(await ids('to=BOSS%40example.net')).toEqual([report.id]);
    expect(await ids('cc=boss@example.net')).toEqual([reporting.id]);
    expect(await ids('any_email=boss@example.net')).toEqual([reporting.id, report.id]);
    expect(await ids('any_email=audit@example.net,team@example.net')).toEqual([other.id, reporting.id]);
    expect(await ids(`any_email=${encodeURIComponent(grant.email)}`)).toEqual([other.id, reporting.id, report.id]);
    expect(await ids('starred=true')).toEqual([report.id]);
    expect(await ids('starred=false')).toEqual([other.id, reporting.id]);
    expect(await ids('has_attachment=true')).toEqual([report.id]);
    expect(await ids('has_attachment=false')).toEqual([other.id, reporting.id]);
    expect(await ids('subject=report&starred=false')).toEqual([other.id]);
    expect(await ids('subject=report&limit=1')).toEqual([other.id]);
  });

  it('pages through filtered results', async () => {
    const grant = await makeAgentGrant(api);
    const wanted = [];
    for (let i = 0; i < 3; i++) {
      wanted.push(await createDraft(api, grant.id, { subject: `match ${i}`, starred: true }));
      await createDraft(api, grant.id, { subject: `skip ${i}` });
    }
    const first = await api.get(`/v3/grants/${grant.id}/drafts?starred=true&limit=2`);
    expect(first.body.data.map((d: Draft) => d.id)).toEqual([wanted[2]!.id, wanted[1]!.id]);
    expect(typeof first.body.next_cursor).toBe('string');
    const second = await api.get(
      `/v3/grants/${grant.id}/drafts?starred=true&limit=2&page_token=${encodeURIComponent(first.body.next_cursor)}`,
    );
    expect(second.body.data.map((d: Draft) => d.id)).toEqual([wanted[0]!.id]);
    expect(second.body).not.toHaveProperty('next_cursor');
  });

  it('rejects query_imap=true and bad parameters with 400', async () => {
    const grant = await makeAgentGrant(api);
    expectError(
      await api.get(`/v3/grants/${grant.id}/drafts?query_imap=true`),
      400,
      'invalid_request_error',
      'query_imap',
    );
    for (const query of [
      'limit=0',
      'page_token=garbage',
      'colour=red',
      'starred=maybe',
      'to=not-an-address',
      'subject=%21%21',
      'in=drafts',
    ]) {
      const response = await api.get(`/v3/grants/${grant.id}/drafts?${query}`);
      expect({ query, status: response.status }).toEqual({ query, status: 400 });
      expect(response.body.error.type).toBe('invalid_request_error');
    }
  });

  it("answers 404 for another application's grant", async () => {
    const grant = await makeAgentGrant(api);
    await createDraft(api, grant.id, { subject: 'Hidden' });
    const other = apiClient(gateway.url, (await makeApplication('other')).apiKey);
    expectError(await other.get(`/v3/grants/${grant.id}/drafts`), 404, 'not_found_error');
  });
});

describe('DELETE /v3/grants/{grant_id}/drafts/{draft_id}', () => {
  it('deletes the draft for good, answering an empty envelope', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const keep = await createDraft(api, grant.id, { subject: 'Keep' });
    const draft = await createDraft(api, grant.id, {
      subject: 'Delete me',
      attachments: [{ filename: 'x.txt', content: base64('x') }],
    });
    expect(await draftsFolderCount(grant.id)).toBe(2);

    // Act
    const response = await api.delete(`/v3/grants/${grant.id}/drafts/${draft.id}`);

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ request_id: response.headers.get('x-request-id') });
    expectError(await api.get(`/v3/grants/${grant.id}/drafts/${draft.id}`), 404, 'not_found_error');
    expectError(await api.delete(`/v3/grants/${grant.id}/drafts/${draft.id}`), 404, 'not_found_error');
    expectError(await api.put(`/v3/grants/${grant.id}/drafts/${draft.id}`, { subject: 'x' }), 404, 'not_found_error');
    expect((await api.get(`/v3/grants/${grant.id}/drafts`)).body.data.map((d: Draft) => d.id)).toEqual([keep.id]);
    expect(await draftsFolderCount(grant.id)).toBe(1);
  });

  it('removes a reply draft from its thread', async () => {
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const original = await receivedMessage(a, b, 'Thread with draft');
    const draft = await createDraft(api, b.id, { reply_to_message_id: original.id, subject: 'Re: Thread with draft' });
    expect((await api.delete(`/v3/grants/${b.id}/drafts/${draft.id}`)).status).toBe(200);
    const thread = await api.get(`/v3/grants/${b.id}/threads/${original.thread_id}`);
    expect(thread.body.data.draft_ids).toEqual([]);
    expect(thread.body.data.has_drafts).toBe(false);
  });

  it("answers 404 for another grant's or another application's draft, deleting nothing", async () => {
    const owner = await makeAgentGrant(api);
    const sibling = await makeAgentGrant(api);
    const draft = await createDraft(api, owner.id, { subject: 'Not yours' });
    const other = apiClient(gateway.url, (await makeApplication('other')).apiKey);
    const otherGrant = await makeAgentGrant(other);
    expectError(await api.delete(`/v3/grants/${sibling.id}/drafts/${draft.id}`), 404, 'not_found_error');
    expectError(await other.delete(`/v3/grants/${owner.id}/drafts/${draft.id}`), 404, 'not_found_error');
    expectError(await other.delete(`/v3/grants/${otherGrant.id}/drafts/${draft.id}`), 404, 'not_found_error');
    expectError(await other.request('POST', `/v3/grants/${otherGrant.id}/drafts/${draft.id}`), 404, 'not_found_error');
    expectError(await api.delete(`/v3/grants/${owner.id}/drafts/drf%23bad`), 404, 'not_found_error');
    expectError(
      await api.delete(`/v3/grants/${owner.id}/drafts/${draft.id}?select=id`),
      400,
      'invalid_request_error',
      'select',
    );
    expect((await api.get(`/v3/grants/${owner.id}/drafts/${draft.id}`)).status).toBe(200);
    expect(await draftsFolderCount(owner.id)).toBe(1);
  });
});
