import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';

/**
 * A draft's attachments through the attachment endpoints: `message_id` takes a draft ID (`drf_…`)
 * as well as a message ID, for metadata and download, whether the draft got its files as base64 in
 * JSON or as multipart parts. Another grant's or another application's draft stays a 404.
 */
let gateway: Gateway;
let api: ApiClient;
let apiKey: string;

beforeAll(async () => {
  gateway = await startGateway();
  apiKey = (await makeApplication()).apiKey;
  api = apiClient(gateway.url, apiKey);
});
afterAll(async () => gateway?.close());

/** Raw bytes of a download (the JSON client would read them as text). */
async function download(path: string): Promise<{ status: number; headers: Headers; bytes: Buffer }> {
  const response = await fetch(gateway.url + path, { headers: { authorization: `Bearer ${apiKey}` } });
  return { status: response.status, headers: response.headers, bytes: Buffer.from(await response.arrayBuffer()) };
}

type Attachment = {
  id: string;
  filename: string;
  content_type: string;
  size: number;
  is_inline: boolean;
  grant_id: string;
};

function expectNotFound(response: ApiResponse | { status: number }) {
  expect(response.status).toBe(404);
  if ('body' in response) expect(response.body.error.type).toBe('not_found_error');
}

describe('attachments of drafts', () => {
  it('serves metadata and bytes of a draft attachment given as base64 in JSON', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const bytes = Buffer.from([0, 1, 2, 250, 251, 252, 10, 13, 0x25, 0x50, 0x44, 0x46]);
    const created = await api.post(`/v3/grants/${grant.id}/drafts`, {
      subject: 'Draft with a file',
      to: [{ email: 'someone@example.net' }],
      attachments: [
        { filename: 'numbers.bin', content_type: 'application/octet-stream', content: bytes.toString('base64') },
      ],
    });
    expect(created.status, created.text).toBe(200);
    const draftId = created.body.data.id as string;
    expect(draftId).toMatch(/^drf_/);
    const [attachment] = created.body.data.attachments as Attachment[];

    // Act
    const meta = await api.get(`/v3/grants/${grant.id}/attachments/${attachment!.id}?message_id=${draftId}`);
    const file = await download(`/v3/grants/${grant.id}/attachments/${attachment!.id}/download?message_id=${draftId}`);

    // Assess
    expect(meta.status, meta.text).toBe(200);
    expect(meta.body.data).toMatchObject({
      id: attachment!.id,
      grant_id: grant.id,
      filename: 'numbers.bin',
      content_type: 'application/octet-stream',
      size: bytes.length,
      is_inline: false,
    });
    expect(file.status).toBe(200);
    expect(file.bytes.equals(bytes)).toBe(true);
    expect(file.headers.get('content-disposition')).toContain('numbers.bin');
  });

  it('serves metadata and bytes of draft attachments given as multipart parts', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const pdf = Buffer.from('%PDF-1.4 not really a pdf\n');
    const form = new FormData();
    form.append('message', JSON.stringify({ subject: 'Multipart draft', to: [{ email: 'x@example.net' }] }));
    form.append('file', new Blob([pdf], { type: 'application/pdf' }), 'report.pdf');
    form.append('file', new Blob(['second file'], { type: 'text/plain' }), 'notes.txt');
    const response = await fetch(`${gateway.url}/v3/grants/${grant.id}/drafts`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}` },
      body: form,
    });
    expect(response.status).toBe(200);
    const draft = ((await response.json()) as { data: { id: string; attachments: Attachment[] } }).data;

    // Act
    const metas = await Promise.all(
      draft.attachments.map((a) => api.get(`/v3/grants/${grant.id}/attachments/${a.id}?message_id=${draft.id}`)),
    );
    const files = await Promise.all(
      draft.attachments.map((a) =>
        download(`/v3/grants/${grant.id}/attachments/${a.id}/download?message_id=${draft.id}`),
      ),
    );

    // Assess
    expect(metas.map((m) => m.status)).toEqual([200, 200]);
    expect(metas.map((m) => [m.body.data.filename, m.body.data.content_type, m.body.data.size])).toEqual([
      ['report.pdf', 'application/pdf', pdf.length],
      ['notes.txt', 'text/plain', 11],
    ]);
    expect(files.map((f) => f.status)).toEqual([200, 200]);
    expect(files[0]!.bytes.equals(pdf)).toBe(true);
    expect(files[1]!.bytes.toString('utf8')).toBe('second file');
  });

  it("answers 404 for another grant's draft, another application's draft, an unknown draft and an attachment the draft does not have", async () => {
    // Prepare
    const owner = await makeAgentGrant(api);
    const neighbour = await makeAgentGrant(api);
    const created = await api.post(`/v3/grants/${owner.id}/drafts`, {
      subject: 'Private draft',
      attachments: [
        { filename: 'secret.txt', content_type: 'text/plain', content: Buffer.from('secret').toString('base64') },
      ],
    });
    expect(created.status, created.text).toBe(200);
    const draftId = created.body.data.id as string;
    const attachmentId = created.body.data.attachments[0].id as string;
    const other = apiClient(gateway.url, (await makeApplication('draft-attachments-other')).apiKey);
    const otherGrant = await makeAgentGrant(other);
    const path = (grantId: string, attachment = attachmentId, message = draftId) =>
      `/v3/grants/${grantId}/attachments/${attachment}?message_id=${message}`;

    // Act + Assess: the owner reads it (the sentinel that the paths are right).
    expect((await api.get(path(owner.id))).status).toBe(200);
    // Another grant of the same application.
    expectNotFound(await api.get(path(neighbour.id)));
    expectNotFound(
      await download(`/v3/grants/${neighbour.id}/attachments/${attachmentId}/download?message_id=${draftId}`),
    );
    // Another application, with its own grant and with the owner's grant ID.
    expectNotFound(await other.get(path(otherGrant.id)));
    expectNotFound(await other.get(path(owner.id)));
    // An unknown draft, a malformed draft ID, an attachment the draft does not have.
    expectNotFound(await api.get(path(owner.id, attachmentId, 'drf_01jd6abcdefghjkmnpqrstvwxy')));
    expectNotFound(await api.get(path(owner.id, attachmentId, 'drf_not-an-id')));
    expectNotFound(await api.get(path(owner.id, 'att_unknown')));
  });

  it('follows the draft: replaced attachments are gone, and a deleted draft is a 404', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const created = await api.post(`/v3/grants/${grant.id}/drafts`, {
      subject: 'Changing',
      attachments: [
        { filename: 'first.txt', content_type: 'text/plain', content: Buffer.from('first').toString('base64') },
      ],
    });
    const draftId = created.body.data.id as string;
    const first = created.body.data.attachments[0].id as string;
    const updated = await api.put(`/v3/grants/${grant.id}/drafts/${draftId}`, {
      attachments: [
        { filename: 'second.txt', content_type: 'text/plain', content: Buffer.from('second').toString('base64') },
      ],
    });
    expect(updated.status, updated.text).toBe(200);
    const second = updated.body.data.attachments[0].id as string;

    // Act + Assess
    expectNotFound(await api.get(`/v3/grants/${grant.id}/attachments/${first}?message_id=${draftId}`));
    const file = await download(`/v3/grants/${grant.id}/attachments/${second}/download?message_id=${draftId}`);
    expect(file.status).toBe(200);
    expect(file.bytes.toString('utf8')).toBe('second');
    expect((await api.delete(`/v3/grants/${grant.id}/drafts/${draftId}`)).status).toBe(200);
    expectNotFound(await api.get(`/v3/grants/${grant.id}/attachments/${second}?message_id=${draftId}`));
  });
});
