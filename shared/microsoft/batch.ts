/**
 * Graph's JSON batching (`POST /v1.0/$batch`): up to MAX_BATCH requests as
 * `{requests: [{id, method, url, headers, body}]}`, their urls relative to the version
 * (`/me/messages/{id}`), answered as `{responses: [{id, status, headers, body}]}` in any order.
 * A JSON body travels as JSON (with its Content-Type, which Graph requires); any other body travels
 * base64-encoded, both ways. The outer request's Authorization holds for every inner one, and each
 * inner request is throttled on its own: one item may be 429 with its own Retry-After while the
 * others succeed.
 */

/** Graph's limit of requests in one batch. */
export const MAX_BATCH = 20;
/** The API version every path of the client is under. */
export const GRAPH_VERSION = '/v1.0';
export const BATCH_PATH = `${GRAPH_VERSION}/$batch`;

export interface BatchItem {
  method: string;
  /** Path and query under GRAPH_VERSION, as an absolute path: `/me/messages?$top=10`. */
  url: string;
  headers?: Record<string, string>;
  /** The body as sent alone: JSON text when its content type is JSON, any text otherwise. */
  body?: string;
}

/** What `$batch` takes: a request of the wire format. */
interface WireRequest {
  id: string;
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
}

/** What `$batch` answers, per request. */
interface WireResponse {
  id?: unknown;
  status?: unknown;
  headers?: unknown;
  body?: unknown;
}

const NULL_BODY = new Set([204, 205, 304]);

const isJson = (contentType: string | undefined) => /^application\/([\w.+-]+\+)?json\b/i.test(contentType ?? '');

const headerOf = (headers: Record<string, string> | undefined, name: string) =>
  Object.entries(headers ?? {}).find(([key]) => key.toLowerCase() === name)?.[1];

/**
 * The batch url of a path and query, or undefined when it is not under GRAPH_VERSION (it cannot
 * travel in a batch).
 */
export function batchUrlOf(pathAndQuery: string): string | undefined {
  if (!pathAndQuery.startsWith(`${GRAPH_VERSION}/`)) return undefined;
  return pathAndQuery.slice(GRAPH_VERSION.length);
}

/** The JSON body of a batch of `items`, item i with id `String(i)`. */
export function encodeBatch(items: readonly BatchItem[]): string {
  const requests = items.map((item, i): WireRequest => {
    const contentType = headerOf(item.headers, 'content-type');
    return {
      id: String(i),
      method: item.method,
      url: item.url,
      ...(item.headers && Object.keys(item.headers).length ? { headers: item.headers } : {}),
      ...(item.body !== undefined
        ? { body: isJson(contentType) ? JSON.parse(item.body) : Buffer.from(item.body).toString('base64') }
        : {}),
    };
  });
  return JSON.stringify({ requests });
}

/**
 * The answers of a batch, by item index, each as the Response the item would have had alone. An item
 * the batch does not answer (or answers in a way that cannot be read) is left out; so is everything
 * when the answer is not a batch answer at all.
 */
export function decodeBatchAnswer(answer: unknown): Map<number, Response> {
  const answers = new Map<number, Response>();
  const responses = (answer as { responses?: unknown } | null)?.responses;
  if (!Array.isArray(responses)) return answers;
  for (const one of responses as WireResponse[]) {
    const index = typeof one?.id === 'string' && /^\d{1,3}$/.test(one.id) ? Number(one.id) : undefined;
    const status = one?.status;
    if (index === undefined || typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599)
      continue;
    const headers = new Headers();
    if (one.headers && typeof one.headers === 'object')
      for (const [name, value] of Object.entries(one.headers as Record<string, unknown>))
        if (typeof value === 'string') headers.set(name, value);
    answers.set(index, new Response(NULL_BODY.has(status) ? null : bodyOf(one.body, headers), { status, headers }));
  }
  return answers;
}

/** An item's body as bytes: JSON as its text, anything else decoded from base64. */
function bodyOf(body: unknown, headers: Headers): string | Uint8Array | null {
  if (body === undefined || body === null) return null;
  const type = headers.get('content-type') ?? undefined;
  if (typeof body === 'string' && type !== undefined && !isJson(type)) return Buffer.from(body, 'base64');
  if (!type) headers.set('content-type', 'application/json');
  return JSON.stringify(body);
}
