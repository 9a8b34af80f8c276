import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { DynamoDBDocumentClient, GetCommand } from '@aws-sdk/lib-dynamodb';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { GrantRecord } from '#shared/db/grants';
import {
  AuthenticationError,
  ConflictError,
  ForbiddenError,
  InvalidRequestError,
  ProviderError,
  RateLimitError,
} from '#shared/errors';
import { decodeBatchAnswer, encodeBatch, MAX_BATCH } from '#shared/microsoft/batch';
import {
  graphClientOf,
  GraphGoneError,
  GraphNotFoundError,
  GraphRequestError,
  linkPath,
  mailboxPath,
  newGraphClient,
  type GraphClientOptions,
  type GraphRequest,
} from '#shared/microsoft/client';
import { MailboxLimits } from '#shared/microsoft/limits';

/**
 * Provider B's REST client (shared/microsoft/client.ts, batch.ts, limits.ts) against a tiny Graph on
 * loopback that answers what each test scripts, for single calls and for each item of a `$batch`
 * alike, and measures how many requests of the mailbox it runs at once (a batch counts as the up to
 * four items Graph dispatches together). Waits are recorded, not slept; the access token is given by
 * the test, and DynamoDB is mocked (only the connector's api_base_url is read from it, once).
 */
const dynamoMock = mockClient(DynamoDBDocumentClient);

/** A request as the fake Graph saw it: alone, or as an item of a batch (its path then under /v1.0 again). */
interface Hit {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  inBatch: boolean;
}
interface Answer {
  status?: number;
  headers?: Record<string, string>;
  body?: unknown;
  delayMs?: number;
  /** The body as it is (not JSON). */
  raw?: string;
  /** Close the connection without an answer. */
  drop?: boolean;
  /** An item the batch's answer leaves out. */
  omit?: boolean;
}
type Script = (hit: Hit) => Answer | undefined;

let graph: Server;
let base: string;
/** Every request and batch item, in order of arrival. */
const hits: Hit[] = [];
/** HTTP requests, by path. */
const requests: string[] = [];
let script: Script = () => undefined;
let inFlight = 0;
let most = 0;
/** A second server no link may lead to: it counts what reaches it. */
let sentinel: Server;
let sentinelBase: string;
let sentinelHits = 0;

const ok = (hit: Hit): Answer => ({ status: 200, body: { id: hit.path.split('/').pop(), path: hit.path } });

async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString();
  const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
  requests.push(new URL(req.url!, 'http://x').pathname);
  const outer: Hit = {
    method: req.method!,
    path: req.url!,
    headers,
    body: text && headers['content-type']?.includes('json') ? JSON.parse(text) : text,
    inBatch: false,
  };
  const isBatch = req.url === '/v1.0/$batch';
  const items = isBatch ? (outer.body as { requests: { id: string; url: string }[] }).requests : [];
  const weight = isBatch ? Math.min(items.length, 4) : 1;
  inFlight += weight;
  most = Math.max(most, inFlight);
  try {
    const own = script(outer);
    if (!isBatch || own) {
      if (!isBatch) hits.push(outer);
      const answer = own ?? ok(outer);
      if (answer.delayMs) await new Promise((resolve) => setTimeout(resolve, answer.delayMs));
      if (answer.drop) return void req.socket.destroy();
      const body = answer.raw ?? (answer.body === undefined ? '' : JSON.stringify(answer.body));
      res.writeHead(answer.status ?? 200, {
        ...(body ? { 'content-type': 'application/json' } : {}),
        ...answer.headers,
      });
      return void res.end(body);
    }
    // The batch: each item answered as it would be alone, in reverse order (Graph may answer in any).
    const responses = (outer.body as { requests: Record<string, unknown>[] }).requests.flatMap((item) => {
      const hit: Hit = {
        method: item.method as string,
        path: `/v1.0${item.url as string}`,
        headers: (item.headers as Record<string, string>) ?? {},
        body: item.body,
        inBatch: true,
      };
      hits.push(hit);
      const answer = script(hit) ?? ok(hit);
      if (answer.omit) return [];
      return {
        id: item.id,
        status: answer.status ?? 200,
        headers: { 'content-type': 'application/json', ...answer.headers },
        ...(answer.body !== undefined ? { body: answer.body } : {}),
      };
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ responses: responses.reverse() }));
  } finally {
    inFlight -= weight;
  }
}

const listen = async (server: Server) => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

beforeAll(async () => {
  graph = createServer((req, res) => void serve(req, res));
  base = await listen(graph);
  sentinel = createServer((_req, res) => {
    sentinelHits++;
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"value":[]}');
  });
  sentinelBase = await listen(sentinel);
});

afterAll(async () => {
  graph?.close();
  sentinel?.close();
  dynamoMock.restore();
});

beforeEach(() => {
  hits.length = 0;
  requests.length = 0;
  script = () => undefined;
  most = 0;
});

let grants = 0;
/** A grant of a user (its own mailbox limits: a new ID each time). */
const makeGrant = (overrides: Partial<GrantRecord> = {}): GrantRecord =>
  ({
    id: `grant_unit${String(++grants).padStart(6, '0')}`,
    application_id: 'app_unit',
    provider: 'microsoft',
    grant_status: 'valid',
    email: 'ada@contoso.example',
    provider_user_id: '00000000-0000-0000-0000-00000000000a',
    scope: ['Mail.ReadWrite'],
    settings: {},
    created_at: 0,
    updated_at: 0,
    blocked: false,
    ...overrides,
  }) as GrantRecord;

const waits: number[] = [];
const clientOf = (grant = makeGrant(), options: GraphClientOptions = {}, apiBase: string | undefined = base) => {
  waits.length = 0;
  return newGraphClient(grant, apiBase, {
    sleep: async (ms) => void waits.push(ms),
    random: () => 0.5,
    accessToken: async () => 'token-1',
    ...options,
  });
};
/** The first `times` requests to `path` answered with `answer`, the others as usual. */
const failing = (path: string, answer: Answer, times = 1): Script => {
  let left = times;
  return (hit) => (hit.path.startsWith(path) && left-- > 0 ? answer : undefined);
};
const caught = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('Function: newGraphClient', () => {
  it('calls /v1.0 on the api base with the bearer token, its headers and OData query', async () => {
    // Prepare
    const client = clientOf();

    // Act
    const answer = await client.call<{ path: string }>({
      path: `${client.mailbox}/mailFolders/inbox/messages`,
      query: { $select: ['subject', 'from'], $filter: "isRead eq false and subject eq 'a b'", $top: 10 },
      headers: { prefer: 'outlook.body-content-type="text"' },
    });

    // Assess
    expect(answer.path).toMatch(/^\/v1\.0\/me\/mailFolders\/inbox\/messages\?/);
    expect(hits).toHaveLength(1);
    const [hit] = hits;
    expect(hit!.path).toBe(
      '/v1.0/me/mailFolders/inbox/messages?$select=subject,from&$filter=isRead%20eq%20false%20and%20subject%20eq%20%27a%20b%27&$top=10',
    );
    expect(hit!.headers.authorization).toBe('Bearer token-1');
    // Every call asks for immutable IDs, beside its own preferences.
    expect(hit!.headers.prefer).toBe('outlook.body-content-type="text", IdType="ImmutableId"');
    expect(client.calls).toBe(1);
  });

  it('addresses /users/{id} for a grant of application permissions, /me for a user', () => {
    // Prepare
    const user = makeGrant();
    const app = makeGrant({
      email: 'ops@contoso.example',
      provider_user_id: 'ops@contoso.example',
      settings: { credential_id: 'cred_1', credential_type: 'adminconsent', app_permission: true },
    });

    // Act
    const paths = [mailboxPath(user), mailboxPath(app), clientOf(app).mailbox];

    // Assess
    expect(paths).toEqual(['/v1.0/me', '/v1.0/users/ops@contoso.example', '/v1.0/users/ops@contoso.example']);
  });

  it('sends a JSON body as JSON, another as the text it is, and reads a text answer', async () => {
    // Prepare
    const client = clientOf();
    script = (hit) =>
      hit.path.endsWith('/$value')
        ? { status: 200, raw: 'MIME-Version: 1.0\r\n', headers: { 'content-type': 'message/rfc822' } }
        : { status: 202 };

    // Act
    await client.call({ method: 'POST', path: `${client.mailbox}/sendMail`, body: { message: { subject: 'Hi' } } });
    await client.call({
      method: 'POST',
      path: `${client.mailbox}/sendMail`,
      body: 'TUlNRQ==',
      contentType: 'text/plain',
    });
    const mime = await client.call<string>({ path: `${client.mailbox}/messages/m1/$value`, answer: 'text' });

    // Assess
    expect(hits[0]!.headers['content-type']).toBe('application/json');
    expect(hits[0]!.body).toEqual({ message: { subject: 'Hi' } });
    expect(hits[1]!.headers['content-type']).toBe('text/plain');
    expect(hits[1]!.body).toBe('TUlNRQ==');
    expect(mime).toBe('MIME-Version: 1.0\r\n');
  });

  it('reads the connector api_base_url of the grant (DynamoDB mocked)', async () => {
    // Prepare
    dynamoMock.reset();
    dynamoMock.on(GetCommand).resolves({
      Item: { provider: 'microsoft', name: 'm', settings: { client_id: 'c', api_base_url: base }, scope: [] },
    });

    // Act
    const client = await graphClientOf(makeGrant(), { accessToken: async () => 'token-1' });
    await client.call({ path: `${client.mailbox}/mailFolders` });

    // Assess
    expect(requests).toEqual(['/v1.0/me/mailFolders']);
    const gets = dynamoMock.commandCalls(GetCommand);
    expect(gets).toHaveLength(1);
    expect(gets[0]!.args[0].input.Key).toEqual({ pk: 'app#app_unit', sk: 'connector#microsoft' });
  });

  it("refuses an api base the guarded client may not call, naming the connector's setting", async () => {
    // Prepare: plain http to a host that is not loopback (refused before any connection)
    const client = clientOf(makeGrant(), {}, 'http://graph.example.com');

    // Act
    const refused = await caught(client.call({ path: '/v1.0/me' }));

    // Assess
    expect(refused).toBeInstanceOf(InvalidRequestError);
    expect((refused as Error).message).toContain("microsoft connector's settings.api_base_url");
  });
});

describe('Function: newGraphClient, retries within the wait budget', () => {
  it('retries a 429 after its Retry-After, and a 503 without one after a jittered backoff', async () => {
    // Prepare
    script = failing('/v1.0/me/messages', { status: 429, headers: { 'retry-after': '2' } });
    const first = clientOf();

    // Act
    await first.call({ path: '/v1.0/me/messages' });

    // Assess
    expect(first.calls).toBe(2);
    expect(waits).toEqual([2000]);

    // Prepare
    script = failing('/v1.0/me/messages', { status: 503, body: { error: { code: 'serviceNotAvailable' } } }, 2);
    const second = clientOf();

    // Act
    await second.call({ path: '/v1.0/me/messages' });

    // Assess: random 0.5 of 200 ms, then of 400 ms
    expect(second.calls).toBe(3);
    expect(waits).toEqual([100, 200]);
  });

  it('answers 429 with Retry-After when the limit outlasts the budget, and 504 when Graph keeps failing', async () => {
    // Prepare
    script = failing('/v1.0/me/messages', {
      status: 429,
      headers: { 'retry-after': '30' },
      body: { error: { code: 'ApplicationThrottled', message: 'Application is over its MailboxConcurrency limit.' } },
    });

    // Act
    const limited = await caught(clientOf().call({ path: '/v1.0/me/messages' }));

    // Assess
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as RateLimitError).headers['retry-after']).toBe('30');
    expect((limited as Error).message).toContain('smaller limit and select');

    // Prepare
    script = failing('/v1.0/me/messages', { status: 503 }, 4);
    const client = clientOf();

    // Act
    const failed = await caught(client.call({ path: '/v1.0/me/messages' }));

    // Assess
    expect(failed).toBeInstanceOf(ProviderError);
    expect((failed as ProviderError).status).toBe(504);
    expect((failed as ProviderError).type).toBe('provider_error');
    expect(client.calls).toBe(4);
  });

  it('retries a 504 or a lost connection of a GET, never of a POST (it may have been carried out)', async () => {
    // Prepare
    script = failing('/v1.0/me/messages', { status: 504 });
    const get = clientOf();

    // Act
    await get.call({ path: '/v1.0/me/messages' });

    // Assess
    expect(get.calls).toBe(2);

    // Prepare
    script = failing('/v1.0/me/sendMail', { status: 504 });
    const post = clientOf();

    // Act
    const failed = await caught(post.call({ method: 'POST', path: '/v1.0/me/sendMail', body: {} }));

    // Assess
    expect(failed).toBeInstanceOf(ProviderError);
    expect(post.calls).toBe(1);

    // Prepare
    script = failing('/v1.0/me/', { drop: true });
    const dropped = clientOf();

    // Act
    await dropped.call({ path: '/v1.0/me/mailFolders' });
    script = failing('/v1.0/me/', { drop: true });
    const lost = await caught(dropped.call({ method: 'POST', path: '/v1.0/me/events', body: {} }));

    // Assess
    expect(dropped.calls).toBe(3);
    expect(lost).toBeInstanceOf(ProviderError);
  });

  it('reads the token again after a 401 and retries once; a second 401 is ours', async () => {
    // Prepare
    const tokens = ['token-old', 'token-new', 'token-newer'];
    script = (hit) => (hit.headers.authorization === 'Bearer token-old' ? { status: 401 } : undefined);
    const client = clientOf(makeGrant(), { accessToken: async () => tokens.shift()! });

    // Act
    await client.call({ path: '/v1.0/me' });

    // Assess
    expect(hits.map((h) => h.headers.authorization)).toEqual(['Bearer token-old', 'Bearer token-new']);

    // Prepare
    script = () => ({ status: 401, body: { error: { code: 'InvalidAuthenticationToken', message: 'expired' } } });

    // Act
    const refused = await caught(client.call({ path: '/v1.0/me' }));

    // Assess
    expect(refused).toBeInstanceOf(AuthenticationError);
    expect((refused as AuthenticationError).status).toBe(401);
  });
});

describe("Function: newGraphClient, Graph's errors as ours", () => {
  const answered = async (answer: Answer) => {
    script = () => answer;
    return caught(clientOf().call({ path: '/v1.0/me/messages/x' }));
  };

  it('maps 400, 403, 404, 409, 412 with Graph message and code', async () => {
    // Act
    const bad = await answered({
      status: 400,
      body: { error: { code: 'ErrorInvalidIdMalformed', message: 'Id is malformed.' } },
    });
    const forbidden = await answered({ status: 403, body: { error: { code: 'ErrorAccessDenied', message: 'No.' } } });
    const missing = await answered({
      status: 404,
      body: { error: { code: 'ErrorItemNotFound', message: 'The specified object was not found in the store.' } },
    });
    const conflict = await answered({ status: 409, body: { error: { code: 'ErrorIrresolvableConflict' } } });
    const stale = await answered({ status: 412, body: { error: { code: 'PreconditionFailed' } } });
    const proxy = await answered({ status: 404 });

    // Assess
    expect(bad).toBeInstanceOf(GraphRequestError);
    expect((bad as GraphRequestError).status).toBe(400);
    expect((bad as GraphRequestError).graphCode).toBe('ErrorInvalidIdMalformed');
    expect((bad as Error).message).toBe('provider B: Id is malformed.');
    expect(forbidden).toBeInstanceOf(ForbiddenError);
    expect(missing).toBeInstanceOf(GraphNotFoundError);
    expect((missing as GraphNotFoundError).status).toBe(404);
    expect((missing as GraphNotFoundError).graphCode).toBe('ErrorItemNotFound');
    expect(conflict).toBeInstanceOf(ConflictError);
    expect(stale).toBeInstanceOf(ConflictError);
    expect((proxy as Error).message).toBe('provider B: HTTP 404');
  });

  it('turns a 410, or a 400 syncStateNotFound, into a cursor to start over', async () => {
    // Act
    const gone = await answered({ status: 410, body: { error: { code: 'resyncRequired', message: 'Resync.' } } });
    const expired = await answered({
      status: 400,
      body: { error: { code: 'syncStateNotFound', message: 'The sync state generation is not found.' } },
    });

    // Assess
    expect(gone).toBeInstanceOf(GraphGoneError);
    expect((gone as GraphGoneError).reason).toBe('resyncRequired');
    expect(expired).toBeInstanceOf(GraphGoneError);
    expect((expired as GraphGoneError).reason).toBe('syncStateNotFound');
  });
});

describe('Function: newGraphClient, $batch', () => {
  const get = (i: number): GraphRequest => ({ path: `/v1.0/me/messages/m${i}`, query: { $select: 'id' } });

  it('sends the calls made at once as batches of at most 20, each with its own answer', async () => {
    // Prepare
    const client = clientOf();

    // Act
    const answers = await client.all<{ id: string }>(Array.from({ length: 25 }, (_, i) => get(i)));

    // Assess
    expect(answers.map((a) => a.status === 'fulfilled' && a.value.id)).toEqual(
      Array.from({ length: 25 }, (_, i) => `m${i}?$select=id`),
    );
    expect(requests).toEqual(['/v1.0/$batch', '/v1.0/$batch']);
    expect(hits.filter((h) => h.inBatch)).toHaveLength(25);
    expect(hits[0]!.path).toBe('/v1.0/me/messages/m0?$select=id');
    expect(client.calls).toBe(2);
    expect(MAX_BATCH).toBe(20);
  });

  it('retries a 429 item alone after its own Retry-After, and keeps each item 404 to its call', async () => {
    // Prepare: m3 is throttled once inside the batch; m9 does not exist
    script = (hit) => {
      if (hit.path.includes('/m9'))
        return { status: 404, body: { error: { code: 'ErrorItemNotFound', message: 'x' } } };
      if (hit.path.includes('/m3') && hit.inBatch) return { status: 429, headers: { 'retry-after': '1' }, body: {} };
      return undefined;
    };
    const client = clientOf();

    // Act
    const answers = await client.all<{ id: string }>(Array.from({ length: 10 }, (_, i) => get(i)));

    // Assess
    expect(answers.filter((a) => a.status === 'fulfilled')).toHaveLength(9);
    const missing = answers[9]!;
    expect(missing.status === 'rejected' && missing.reason).toBeInstanceOf(GraphNotFoundError);
    // One batch of 10; then m3 alone, as itself, after its own wait.
    expect(requests).toEqual(['/v1.0/$batch', '/v1.0/me/messages/m3']);
    expect(waits).toEqual([1000]);
  });

  it('retries every item of a batch refused as a whole, and answers each its own 429 when the wait is too long', async () => {
    // Prepare
    script = failing('/v1.0/$batch', { status: 503, headers: { 'retry-after': '0' } });
    const client = clientOf();

    // Act
    const answers = await client.all(Array.from({ length: 5 }, (_, i) => get(i)));

    // Assess: the five waited together, and went out together again
    expect(answers.every((a) => a.status === 'fulfilled')).toBe(true);
    expect(requests).toEqual(['/v1.0/$batch', '/v1.0/$batch']);
    expect(waits).toEqual([0, 0, 0, 0, 0]);

    // Prepare
    script = (hit) =>
      hit.inBatch && hit.path.includes('/m1') ? { status: 429, headers: { 'retry-after': '60' } } : undefined;

    // Act
    const limited = await clientOf().all(Array.from({ length: 3 }, (_, i) => get(i)));

    // Assess
    expect(limited.map((a) => a.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    const refused = limited[1]!.status === 'rejected' ? (limited[1]!.reason as RateLimitError) : undefined;
    expect(refused).toBeInstanceOf(RateLimitError);
    expect(refused!.headers['retry-after']).toBe('60');
  });

  it('sends a POST item with its JSON body; an item the answer leaves out is retried if a GET, a 504 if a POST', async () => {
    // Prepare: the batch's answer leaves out both items the first time
    let omitted = 0;
    script = (hit) => (hit.inBatch && omitted++ < 2 ? { omit: true } : undefined);
    const client = clientOf();

    // Act
    const answers = await client.all([
      get(0),
      { method: 'POST', path: '/v1.0/me/messages/m1/move', body: { destinationId: 'archive' } },
    ]);

    // Assess
    expect(answers.map((a) => a.status)).toEqual(['fulfilled', 'rejected']);
    expect(hits[1]).toEqual({
      method: 'POST',
      path: '/v1.0/me/messages/m1/move',
      headers: { prefer: 'IdType="ImmutableId"', 'content-type': 'application/json' },
      body: { destinationId: 'archive' },
      inBatch: true,
    });
    // The POST is not repeated: it may have been carried out.
    const failed = (answers[1] as PromiseRejectedResult).reason as ProviderError;
    expect(failed).toBeInstanceOf(ProviderError);
    expect(failed.status).toBe(504);
    expect(requests).toEqual(['/v1.0/$batch', '/v1.0/me/messages/m0']);
  });
});

describe('Function: newGraphClient, concurrency per mailbox', () => {
  it('keeps at most 4 requests of one mailbox in flight, measured by the server', async () => {
    // Prepare: two clients of one grant share its mailbox's slots
    script = () => ({ status: 200, body: {}, delayMs: 15 });
    const grant = makeGrant();
    const c = clientOf(grant);
    const d = clientOf(grant);

    // Act
    await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 2 ? c : d).call({ path: `/v1.0/me/messages/m${i}` })));

    // Assess
    expect(most).toBe(4);
    expect(requests).toHaveLength(24);
  });

  it('counts a batch as the four requests Graph runs from it at once', async () => {
    // Prepare
    script = (hit) => (hit.inBatch || hit.path === '/v1.0/$batch' ? undefined : { status: 200, body: {}, delayMs: 15 });
    const c = clientOf(makeGrant());

    // Act: a batch of 20 under way, then 8 single calls
    const batch = c.all(Array.from({ length: 20 }, (_, i) => ({ path: `/v1.0/me/messages/b${i}` })));
    // (its calls read the token, then the batcher gathers them at the next turn)
    for (let turn = 0; turn < 2; turn++) await new Promise((resolve) => setImmediate(resolve));
    await Promise.all([batch, ...Array.from({ length: 8 }, (_, i) => c.call({ path: `/v1.0/me/messages/s${i}` }))]);

    // Assess: the singles waited for the batch (no more than 4 at once, the batch's included)
    expect(most).toBe(4);
    expect(requests[0]).toBe('/v1.0/$batch');
    expect(requests).toHaveLength(9);
  });
});

describe('Function: newGraphClient, paging', () => {
  it('follows @odata.nextLink on the same base with the first request headers, and ends with the deltaLink', async () => {
    // Prepare
    script = (hit) => {
      const url = new URL(hit.path, base);
      if (url.pathname !== '/v1.0/me/mailFolders/inbox/messages/delta') return undefined;
      const skip = url.searchParams.get('$skiptoken');
      if (!skip) return { body: { value: [{ id: 1 }], '@odata.nextLink': `${base}${url.pathname}?$skiptoken=p2` } };
      if (skip === 'p2')
        return { body: { value: [{ id: 2 }], '@odata.nextLink': `${base}${url.pathname}?$skiptoken=p3` } };
      return { body: { value: [], '@odata.deltaLink': `${base}${url.pathname}?$deltatoken=d1` } };
    };
    const client = clientOf();

    // Act
    const pages = [];
    for await (const page of client.pages<{ id: number }>({
      path: '/v1.0/me/mailFolders/inbox/messages/delta',
      headers: { prefer: 'odata.maxpagesize=1' },
    }))
      pages.push(page);

    // Assess
    expect(pages.map((p) => p.value)).toEqual([[{ id: 1 }], [{ id: 2 }], []]);
    expect(pages.at(-1)!.deltaLink).toBe(`${base}/v1.0/me/mailFolders/inbox/messages/delta?$deltatoken=d1`);
    expect(hits.map((h) => h.headers.prefer)).toEqual(Array(3).fill('odata.maxpagesize=1, IdType="ImmutableId"'));
    expect(hits[1]!.path).toBe('/v1.0/me/mailFolders/inbox/messages/delta?$skiptoken=p2');
  });

  it('never calls a link on another base: a nextLink there is a provider error, a stored link a cursor to start over', async () => {
    // Prepare
    script = () => ({ body: { value: [{ id: 1 }], '@odata.nextLink': `${sentinelBase}/v1.0/me/messages?$skip=1` } });
    const client = clientOf();

    // Act
    const seen: unknown[] = [];
    const failed = await caught(
      (async () => {
        for await (const page of client.pages({ path: '/v1.0/me/messages' })) seen.push(page.value);
      })(),
    );
    const stored = await caught(client.page(`${sentinelBase}/v1.0/me/messages/delta?$deltatoken=x`));

    // Assess
    expect(seen).toEqual([[{ id: 1 }]]);
    expect(failed).toBeInstanceOf(ProviderError);
    expect(stored).toBeInstanceOf(GraphGoneError);
    expect(sentinelHits).toBe(0);
  });

  it('takes only absolute links on the same scheme, host and port, under /v1.0', () => {
    // Act / Assess
    expect(linkPath('https://graph.microsoft.com/v1.0/me/messages?$skip=10', undefined)).toBe(
      '/v1.0/me/messages?$skip=10',
    );
    expect(linkPath(`${base}/v1.0/me/events/delta?$deltatoken=a%2Bb`, base)).toBe(
      '/v1.0/me/events/delta?$deltatoken=a%2Bb',
    );
    expect(linkPath('https://graph.microsoft.com/beta/me/messages', undefined)).toBeUndefined();
    expect(linkPath('http://graph.microsoft.com/v1.0/me/messages', undefined)).toBeUndefined();
    expect(linkPath('https://graph.microsoft.com.evil.example/v1.0/me', undefined)).toBeUndefined();
    expect(linkPath('https://user@graph.microsoft.com/v1.0/me', undefined)).toBeUndefined();
    expect(linkPath('/v1.0/me/messages', undefined)).toBeUndefined();
    expect(linkPath('https://graph.microsoft.com/v1.0/me/messages', base)).toBeUndefined();
  });
});

describe('Function: encodeBatch / decodeBatchAnswer', () => {
  it('encodes JSON bodies as JSON and other bodies as base64, with ids by index', () => {
    // Act
    const body = JSON.parse(
      encodeBatch([
        { method: 'GET', url: '/me/messages/a' },
        {
          method: 'PATCH',
          url: '/me/messages/b',
          headers: { 'content-type': 'application/json' },
          body: '{"isRead":true}',
        },
        { method: 'POST', url: '/me/sendMail', headers: { 'Content-Type': 'text/plain' }, body: 'MIME' },
      ]),
    ) as unknown;

    // Assess
    expect(body).toEqual({
      requests: [
        { id: '0', method: 'GET', url: '/me/messages/a' },
        {
          id: '1',
          method: 'PATCH',
          url: '/me/messages/b',
          headers: { 'content-type': 'application/json' },
          body: { isRead: true },
        },
        {
          id: '2',
          method: 'POST',
          url: '/me/sendMail',
          headers: { 'Content-Type': 'text/plain' },
          body: Buffer.from('MIME').toString('base64'),
        },
      ],
    });
  });

  it('decodes answers in any order, base64 bodies as bytes, and leaves out what it cannot read', async () => {
    // Act
    const answers = decodeBatchAnswer({
      responses: [
        { id: '2', status: 204, headers: {} },
        { id: '0', status: 200, headers: { 'Content-Type': 'application/json' }, body: { id: 'a' } },
        { id: '1', status: 429, headers: { 'Retry-After': '7' }, body: { error: { code: 'TooManyRequests' } } },
        {
          id: '3',
          status: 200,
          headers: { 'Content-Type': 'message/rfc822' },
          body: Buffer.from('MIME').toString('base64'),
        },
        { id: 'x', status: 200 },
        { id: '4', status: 'ok' },
      ],
    });

    // Assess
    expect([...answers.keys()].sort()).toEqual([0, 1, 2, 3]);
    expect(await answers.get(0)!.json()).toEqual({ id: 'a' });
    expect(answers.get(1)!.status).toBe(429);
    expect(answers.get(1)!.headers.get('retry-after')).toBe('7');
    expect(await answers.get(1)!.json()).toEqual({ error: { code: 'TooManyRequests' } });
    expect(answers.get(2)!.status).toBe(204);
    expect(await answers.get(3)!.text()).toBe('MIME');
    expect(decodeBatchAnswer({ error: { code: 'BadRequest' } }).size).toBe(0);
  });
});

describe('Class: MailboxLimits', () => {
  it('waits for a request when the bucket is spent, and answers 429 at once when the wait is too long', () => {
    // Prepare: 600 requests per 10 minutes (one a second), 2 at once
    let now = 0;
    const limits = new MailboxLimits({ now: () => now, requestsPerWindow: 600, burst: 2 });

    // Act
    const free = [limits.reserve(1, 8_000), limits.reserve(1, 8_000)];
    const paced = [limits.reserve(1, 8_000), limits.reserve(1, 8_000)];
    now += 2_000;
    const after = limits.reserve(1, 8_000);
    const refused = (() => {
      try {
        for (let i = 0; i < 20; i++) limits.reserve(1, 8_000);
      } catch (error) {
        return error;
      }
    })();

    // Assess
    expect(free).toEqual([0, 0]);
    expect(paced).toEqual([1000, 2000]);
    expect(after).toBe(1000);
    expect(refused).toBeInstanceOf(RateLimitError);
    expect(Number((refused as RateLimitError).headers['retry-after'])).toBeGreaterThan(8);
  });

  it('queues beyond four slots in order: a batch waits for all four, and those behind it wait for the batch', async () => {
    // Prepare
    const limits = new MailboxLimits();
    const order: string[] = [];
    const gates: (() => void)[] = [];
    const run = (name: string, weight: number) =>
      limits.slot(weight, async () => {
        order.push(name);
        await new Promise<void>((resolve) => gates.push(resolve));
      });

    // Act
    const started = [run('a', 1), run('b', 1), run('batch', 20), run('c', 1)];
    await new Promise((resolve) => setImmediate(resolve));
    const beforeRelease = [...order];
    gates.shift()!();
    gates.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
    const afterRelease = [...order];
    const busy = limits.busy;
    gates.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
    gates.shift()!();
    await Promise.all(started);

    // Assess
    expect(beforeRelease).toEqual(['a', 'b']);
    expect(afterRelease).toEqual(['a', 'b', 'batch']);
    expect(busy).toBe(4);
    expect(order).toEqual(['a', 'b', 'batch', 'c']);
    expect(limits.idle).toBe(true);
  });
});

describe('Isolation', () => {
  it('read nothing from DynamoDB but the one connector (the tokens were the test)', () => {
    // Assess
    expect(dynamoMock.commandCalls(GetCommand)).toHaveLength(1);
    expect(dynamoMock.calls()).toHaveLength(1);
  });
});
