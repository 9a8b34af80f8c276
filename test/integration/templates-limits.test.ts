import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { SIGNATURE_BODY_MAX, TEMPLATE_BODY_MAX, TEMPLATE_SUBJECT_MAX } from '#schemas/templates';
import { dynamo } from '#shared/aws/dynamodb';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';

/**
 * A template or signature is one DynamoDB item (400 KB at most): the longest text the API accepts
 * must fit, written in characters of 4 UTF-8 bytes each, and one character more is a 400 naming the
 * field (not a 500 from DynamoDB).
 */
let gateway: Gateway;
let api: ApiClient;

beforeAll(async () => {
  gateway = await startGateway();
  api = apiClient(gateway.url, (await makeApplication()).apiKey);
});

afterEach(() => vi.restoreAllMocks());
afterAll(async () => gateway?.close());

/** `n` characters of 4 UTF-8 bytes each (one code point, two UTF-16 units). */
const wide = (n: number) => '😀'.repeat(n);
const NAME = wide(256);

describe('template size', () => {
  it('stores a template of the longest subject and body, in 4-byte characters, and gives it back whole', async () => {
    const grant = await makeAgentGrant(api);
    const created = await api.post(`/v3/grants/${grant.id}/templates`, {
      name: NAME,
      engine: 'mustache',
      subject: wide(TEMPLATE_SUBJECT_MAX),
      body: wide(TEMPLATE_BODY_MAX),
    });
    expect(created.status, created.text.slice(0, 500)).toBe(200);
    const read = await api.get(`/v3/grants/${grant.id}/templates/${created.body.data.id}`);
    expect(read.body.data.body).toBe(wide(TEMPLATE_BODY_MAX));
    expect(read.body.data.subject).toBe(wide(TEMPLATE_SUBJECT_MAX));
    // An update to the longest text is stored as well.
    const updated = await api.put(`/v3/grants/${grant.id}/templates/${created.body.data.id}`, {
      engine: 'handlebars',
      body: `${wide(TEMPLATE_BODY_MAX - 1)}!`,
    });
    expect(updated.status, updated.text.slice(0, 500)).toBe(200);
  });

  it.each([
    ['body', { subject: 'x', body: wide(TEMPLATE_BODY_MAX + 1) }],
    ['subject', { subject: wide(TEMPLATE_SUBJECT_MAX + 1), body: 'x' }],
  ])('answers 400 naming the field for one character more in the %s', async (field, fields) => {
    const grant = await makeAgentGrant(api);
    const created = await api.post(`/v3/grants/${grant.id}/templates`, { name: 'n', engine: 'mustache', ...fields });
    expect(created.status, created.text.slice(0, 500)).toBe(400);
    expect(created.body.error.type).toBe('invalid_request_error');
    expect(created.body.error.message).toContain(`'${field}'`);
    const template = await api.post(`/v3/grants/${grant.id}/templates`, { name: 'n', engine: 'mustache', body: 'x' });
    const updated = await api.put(`/v3/grants/${grant.id}/templates/${template.body.data.id}`, fields);
    expect(updated.status, updated.text.slice(0, 500)).toBe(400);
    expect(updated.body.error.message).toContain(`'${field}'`);
    expect((await api.get(`/v3/grants/${grant.id}/templates`)).body.data).toHaveLength(1);
  });
});

describe('signature size and count', () => {
  it('stores the longest signature, in 4-byte characters, and refuses one character more with 400', async () => {
    const grant = await makeAgentGrant(api);
    const created = await api.post(`/v3/grants/${grant.id}/signatures`, { name: NAME, body: wide(SIGNATURE_BODY_MAX) });
    expect(created.status, created.text.slice(0, 500)).toBe(201);
    expect((await api.get(`/v3/grants/${grant.id}/signatures/${created.body.data.id}`)).body.data.body).toBe(
      wide(SIGNATURE_BODY_MAX),
    );
    const tooLong = await api.post(`/v3/grants/${grant.id}/signatures`, {
      name: 'n',
      body: wide(SIGNATURE_BODY_MAX + 1),
    });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error.message).toContain("'body'");
  });

  it('counts every signature towards the limit of 10, even when they fill more than one 1 MB query page', async () => {
    const grant = await makeAgentGrant(api);
    // Ten signatures of about 400 KB: a single query page (1 MB) holds only two of them.
    for (let i = 0; i < 10; i++) {
      const created = await api.post(`/v3/grants/${grant.id}/signatures`, {
        name: `s${i}`,
        body: wide(SIGNATURE_BODY_MAX),
      });
      expect(created.status, created.text.slice(0, 500)).toBe(201);
    }
    const eleventh = await api.post(`/v3/grants/${grant.id}/signatures`, { name: 'one too many', body: 'x' });
    expect(eleventh.status, eleventh.text.slice(0, 500)).toBe(409);
    expect(eleventh.body.error.message).toContain('at most 10 signatures');
  });
});

describe('deleting', () => {
  /** The DynamoDB commands a request sends to the grant's template and signature partitions. */
  async function storageCalls(request: () => Promise<unknown>): Promise<string[]> {
    const calls: string[] = [];
    const send = dynamo.send.bind(dynamo);
    vi.spyOn(dynamo, 'send').mockImplementation(((command: {
      constructor: { name: string };
      input: { Key?: { pk?: string } };
    }) => {
      if (/#(template|signature)$/.test(command.input.Key?.pk ?? '')) calls.push(command.constructor.name);
      return send(command as never);
    }) as never);
    await request();
    vi.restoreAllMocks();
    return calls;
  }

  it.each([
    ['templates', { name: 'n', engine: 'mustache', body: 'x' }],
    ['signatures', { name: 'n', body: 'x' }],
  ])(
    'deletes one of the %s with a single conditional delete, and answers 404 the second time',
    async (collection, body) => {
      const grant = await makeAgentGrant(api);
      const created = await api.post(`/v3/grants/${grant.id}/${collection}`, body);
      const path = `/v3/grants/${grant.id}/${collection}/${created.body.data.id}`;
      let first: { status: number } | undefined;
      expect(await storageCalls(async () => (first = await api.delete(path)))).toEqual(['DeleteCommand']);
      expect(first!.status).toBe(200);
      let second: { status: number } | undefined;
      expect(await storageCalls(async () => (second = await api.delete(path)))).toEqual(['DeleteCommand']);
      expect(second!.status).toBe(404);
    },
  );
});
