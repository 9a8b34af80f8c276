import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildEvent, lambdaContext } from '../../scripts/local-stack/api-gateway-event';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { sunkRaw, waitForSunk } from '../support/mail';

/**
 * Hostile and careless input found by a security review: each case here crashed, hung, answered a
 * 5xx or did something unsafe before its fix.
 */
let gatewayHandle: Gateway;
let api: ApiClient;
let apiKey: string;
let grant: Awaited<ReturnType<typeof makeAgentGrant>>;
const gateway = () => gatewayHandle;

beforeAll(async () => {
  gatewayHandle = await startGateway();
  apiKey = (await makeApplication('hardening')).apiKey;
  api = apiClient(gatewayHandle.url, apiKey);
  grant = await makeAgentGrant(api);
});

afterAll(async () => gatewayHandle?.close());

function multipart(boundary: string, parts: { name: string; filename?: string; content: string }[]): Buffer {
  const chunks = parts.map(
    (p) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"\r\nContent-Type: application/octet-stream` : ''}\r\n\r\n${p.content}\r\n`,
  );
  return Buffer.from(`${chunks.join('')}--${boundary}--\r\n`);
}

async function postMultipart(path: string, body: Buffer, boundary: string, method = 'POST') {
  return api.request(method, path, {
    rawBody: body,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  });
}

const expectEnvelope = (
  response: { status: number; body: any; headers: Headers },
  status: number,
  type = 'invalid_request_error',
) => {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
  expect(response.body.error.type).toBe(type);
  expect(response.body.request_id).toBe(response.headers.get('x-request-id'));
};

describe('multipart field names (scope 1)', () => {
  const HOSTILE = [
    '__proto__[x]',
    'constructor[x]',
    'toString[]',
    'hasOwnProperty[a]',
    'valueOf[0]',
    '__proto__',
    'prototype[a]',
  ];

  it.each(HOSTILE)('refuses a text part named %s with a 400, on send, draft create and draft update', async (name) => {
    const boundary = `b${randomBytes(6).toString('hex')}`;
    const body = multipart(boundary, [
      { name: 'message', content: JSON.stringify({ to: [{ email: grant.email }], subject: 'x' }) },
      { name, content: 'polluted' },
    ]);
    const draft = await api.post(`/v3/grants/${grant.id}/drafts`, { subject: 'draft' });
    expect(draft.status).toBe(200);

    for (const [method, path] of [
      ['POST', `/v3/grants/${grant.id}/messages/send`],
      ['POST', `/v3/grants/${grant.id}/drafts`],
      ['PUT', `/v3/grants/${grant.id}/drafts/${draft.body.data.id}`],
    ] as const) {
      const response = await postMultipart(path, body, boundary, method);
      expectEnvelope(response, 400);
      expect(response.body.error.message).toContain(name.slice(0, 20));
    }
    // Nothing reached a prototype, and the function still answers.
    expect(({} as Record<string, unknown>).x).toBeUndefined();
    expect((await api.get(`/v3/grants/${grant.id}`)).status).toBe(200);
  });

  it('refuses a file part with a hostile name too', async () => {
    const boundary = 'hostilefile';
    const body = multipart(boundary, [
      { name: 'message', content: JSON.stringify({ to: [{ email: grant.email }] }) },
      { name: 'constructor[x]', filename: 'a.txt', content: 'x' },
    ]);
    expectEnvelope(await postMultipart(`/v3/grants/${grant.id}/messages/send`, body, boundary), 400);
  });
});

describe('malformed multipart (scope 2)', () => {
  it.each([
    ['a part without headers', '--b\r\ngarbage without headers\r\n--b--\r\n'],
    ['a body that ends inside a part', '--b\r\nContent-Disposition: form-data; name="message"\r\n\r\n{"to":[]}'],
    ['no parts at all', 'garbage'],
    ['an unterminated file part', '--b\r\nContent-Disposition: form-data; name="f"; filename="a"\r\n\r\nabc'],
    [
      'two message parts',
      '--b\r\nContent-Disposition: form-data; name="message"\r\n\r\n{}\r\n--b\r\nContent-Disposition: form-data; name="message"\r\n\r\n{}\r\n--b--\r\n',
    ],
  ])(
    'answers 400 at once for %s',
    async (_, text) => {
      const response = await postMultipart(`/v3/grants/${grant.id}/messages/send`, Buffer.from(text), 'b');
      expectEnvelope(response, 400);
    },
    10_000,
  );

  it('answers 415 for multipart without a boundary', async () => {
    const response = await api.request('POST', `/v3/grants/${grant.id}/messages/send`, {
      rawBody: 'x',
      headers: { 'content-type': 'multipart/form-data' },
    });
    expectEnvelope(response, 415, 'unsupported_media_type_error');
  });

  it('still accepts a well-formed multipart send with files in the order sent', async () => {
    const boundary = 'wellformed';
    const body = multipart(boundary, [
      { name: 'message', content: JSON.stringify({ to: [{ email: grant.email }], subject: 'multipart ok' }) },
      { name: 'file', filename: 'one.txt', content: 'one' },
      { name: 'file', filename: '../two.txt', content: 'two' },
    ]);
    const response = await postMultipart(`/v3/grants/${grant.id}/messages/send`, body, boundary);
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.attachments.map((a: { filename: string }) => a.filename)).toEqual(['one.txt', 'two.txt']);
  });
});

describe('bodies a local layer hands over parsed (scope 5)', () => {
  /** Invokes a handler with the event serverless-offline builds: falsy JSON values parsed, or dropped. */
  async function invokeWith(
    route: { path: string; routeKey: string; params: Record<string, string>; group: 'templates' | 'drafts-send' },
    body: unknown,
    contentLength: number,
  ) {
    const modules = {
      templates: () => import('#functions/templates/handler'),
      'drafts-send': () => import('#functions/drafts-send/handler'),
    };
    const { handler } = (await modules[route.group]()) as {
      handler: (e: APIGatewayProxyEventV2, c: Context) => Promise<APIGatewayProxyStructuredResultV2>;
    };
    const event = buildEvent(
      { routeKey: route.routeKey, params: route.params },
      {
        method: 'POST',
        url: route.path,
        headers: {
          authorization: `Bearer ${apiKey}`,
          'content-type': 'application/json',
          'content-length': String(contentLength),
        },
        body: Buffer.alloc(0),
        sourceIp: '127.0.0.1',
      },
    );
    (event as { body: unknown }).body = body;
    return handler(event, lambdaContext(route.group));
  }

  it.each([
    ['0', 0],
    ['false', false],
    ['-0', -0],
    ['0.0', 0],
    ['null', null],
    ['""', ''],
  ])(
    'answers 400 for the JSON body %s, on a route whose body is required and on one whose body is optional',
    async (text, parsed) => {
      const draft = await api.post(`/v3/grants/${grant.id}/drafts`, {
        subject: 'Optional body',
        to: [{ email: 'someone@example.net' }],
      });
      expect(draft.status, draft.text).toBe(200);
      const create = {
        path: `/v3/grants/${grant.id}/templates`,
        routeKey: 'POST /v3/grants/{grant_id}/templates',
        params: { grant_id: grant.id },
        group: 'templates' as const,
      };
      const send = {
        path: `/v3/grants/${grant.id}/drafts/${draft.body.data.id}`,
        routeKey: 'POST /v3/grants/{grant_id}/drafts/{draft_id}',
        params: { grant_id: grant.id, draft_id: draft.body.data.id },
        group: 'drafts-send' as const,
      };
      for (const route of [create, send]) {
        const result = await invokeWith(route, parsed, text.length);
        expect(result.statusCode, `${route.routeKey}: ${String(result.body)}`).toBe(400);
        expect(JSON.parse(String(result.body)).error.message).toMatch(/JSON object/);
      }
      // Without a body at all, the optional one still sends the draft.
      expect((await invokeWith(send, undefined, 0)).statusCode).toBe(200);
    },
  );

  it.each(['0', 'false', 'null', '""', '[]', '"text"', '1e3'])(
    'answers 400 over HTTP for the JSON body %s',
    async (text) => {
      for (const path of [
        `/v3/grants/${grant.id}/templates`,
        '/v3/connect/custom',
        `/v3/grants/${grant.id}/messages/send`,
      ]) {
        const response = await api.request('POST', path, {
          rawBody: text,
          headers: { 'content-type': 'application/json' },
        });
        expectEnvelope(response, 400);
        expect(response.body.error.message).toMatch(/JSON object/);
      }
    },
  );
});

describe('downloads, attachment names and credentials (scope 8)', () => {
  it('serves downloads with nosniff and as an attachment, whatever type the uploader chose', async () => {
    const html = '<script>alert(1)</script>';
    const sent = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: grant.email }],
      subject: 'html attachment',
      attachments: [
        { filename: 'page.html', content_type: 'text/html', content: Buffer.from(html).toString('base64') },
      ],
    });
    expect(sent.status, sent.text).toBe(200);
    const attachment = sent.body.data.attachments[0];
    const download = await api.get(
      `/v3/grants/${grant.id}/attachments/${attachment.id}/download?message_id=${sent.body.data.id}`,
    );
    expect(download.status).toBe(200);
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-disposition')).toMatch(/^attachment;/);
    expect(download.text).toBe(html);
    expect((await api.get('/v3/grants')).headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('strips path parts from JSON attachment file names, in the stored message and in the MIME sent out', async () => {
    const outside = uniqueEmail('person').replace('@agents.test', '@example.net');
    const sent = await api.post(`/v3/grants/${grant.id}/messages/send`, {
      to: [{ email: outside }],
      subject: 'traversal',
      attachments: [
        { filename: '../../../../etc/passwd', content: Buffer.from('x').toString('base64') },
        { filename: '..\\..\\windows\\win.ini', content: Buffer.from('y').toString('base64') },
        { filename: '..', content: Buffer.from('z').toString('base64') },
      ],
    });
    expect(sent.status, sent.text).toBe(200);
    expect(sent.body.data.attachments.map((a: { filename: string }) => a.filename)).toEqual([
      'passwd',
      'win.ini',
      'attachment',
    ]);
    const [mail] = await waitForSunk(outside);
    const raw = await sunkRaw(mail!.id);
    expect(raw).toContain('filename=passwd');
    expect(raw).not.toContain('etc/passwd');
    expect(raw).not.toContain('..');
  });

  it('refuses two Authorization headers with a 400 instead of using one', async () => {
    const { port, hostname } = new URL(gateway().url);
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => {
        socket.write(
          `GET /v3/grants HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer wrong-key\r\nAuthorization: Bearer ${apiKey}\r\nConnection: close\r\n\r\n`,
        );
      });
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(raw.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    const body = JSON.parse(
      raw
        .slice(raw.indexOf('\r\n\r\n') + 4)
        .replace(/^[0-9a-f]+\r\n/, '')
        .replace(/\r\n0\r\n\r\n$/, ''),
    );
    expect(body.error).toMatchObject({ type: 'invalid_request_error' });
    expect(body.error.message).toContain('one Authorization header');
  });
});
