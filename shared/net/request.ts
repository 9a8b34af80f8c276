import type { Agent as HttpAgent, IncomingHttpHeaders } from 'node:http';
import type { Agent as HttpsAgent } from 'node:https';
import { isIP } from 'node:net';
import { allowedAddresses, pinnedLookup, type Resolver, type UrlPolicy } from '#shared/net/addresses';
import { inSubsegment } from '#shared/aws/tracing';

/**
 * The one low-level HTTP client for destinations that customers or configurations name (webhook
 * receivers, self-hosted authorization servers). It connects only to addresses the URL policy
 * allows (resolved and pinned per request), gives up after `timeoutMs`, reads at most
 * `maxResponseBytes` of the answer and drops the rest, so a server that hangs, resets or answers
 * 10 MB cannot hold a worker. It never follows redirects: a 3xx is an answer like any other.
 */

/**
 * Connections are kept alive and reused per policy: a pooled socket stays connected to the address
 * that passed the check when it was opened, so reuse cannot reach a rebound address. A request with
 * its own resolver (tests) gets a fresh connection. Node's http and https modules are taken on the first
 * request (`process.getBuiltinModule`): a function that never calls out does not load them at cold start.
 */
const agents = new Map<string, { http: HttpAgent; https: HttpsAgent }>();
function agentsFor(policy: UrlPolicy) {
  const key = `${policy.local ? 'local' : 'public'}${policy.loopbackOnly ? ':loopback' : ''}`;
  let pair = agents.get(key);
  if (!pair) {
    const options = { keepAlive: true, maxSockets: 50, lookup: pinnedLookup(policy) as never };
    pair = {
      http: new (process.getBuiltinModule('node:http').Agent)(options),
      https: new (process.getBuiltinModule('node:https').Agent)(options),
    };
    agents.set(key, pair);
  }
  return pair;
}

export interface GuardedResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  durationMs: number;
  /**
   * The body was cut short: bytes beyond `maxResponseBytes` were dropped, or the connection failed
   * mid-answer. (A body of exactly `maxResponseBytes` may have had more: ask for one byte more than
   * you accept to tell.)
   */
  truncated: boolean;
}

export class GuardedRequestError extends Error {
  constructor(
    readonly kind: 'timeout' | 'network' | 'blocked',
    message: string,
    readonly durationMs: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'GuardedRequestError';
  }
}

export interface GuardedRequest {
  method: string;
  url: URL;
  headers?: Record<string, string>;
  body?: Buffer;
  timeoutMs: number;
  maxResponseBytes: number;
  policy: UrlPolicy;
  /** Sent unless `headers` names its own. */
  userAgent: string;
  resolver?: Resolver;
  /** Aborts the request; the promise then rejects with the signal's reason (as fetch does). */
  signal?: AbortSignal;
}

export async function guardedRequest(req: GuardedRequest): Promise<GuardedResponse> {
  // Node skips `lookup` for IP literals: check those against the policy here.
  const host = req.url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    try {
      await allowedAddresses(host, req.policy);
    } catch (error) {
      throw new GuardedRequestError('blocked', (error as Error).message, 0);
    }
  }
  // Traced (when tracing is on) as a subsegment named after the host, never the path or query.
  return inSubsegment(req.url.host, () => send(req));
}

function send(req: GuardedRequest): Promise<GuardedResponse> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve, reject) => {
    if (req.signal?.aborted) {
      reject(req.signal.reason);
      return;
    }
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      request.destroy();
    };
    const send = process.getBuiltinModule(req.url.protocol === 'https:' ? 'node:https' : 'node:http').request;
    const request = send(
      req.url,
      {
        method: req.method,
        headers: {
          'user-agent': req.userAgent,
          ...req.headers,
          ...(req.body ? { 'content-length': String(req.body.length) } : {}),
        },
        ...(req.resolver
          ? { lookup: pinnedLookup(req.policy, req.resolver) as never, agent: false }
          : { agent: req.url.protocol === 'https:' ? agentsFor(req.policy).https : agentsFor(req.policy).http }),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        response.on('data', (chunk: Buffer) => {
          if (size >= req.maxResponseBytes) return;
          const room = req.maxResponseBytes - size;
          chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
          size += Math.min(chunk.length, room);
          if (chunk.length > room) truncated = true;
          if (size >= req.maxResponseBytes) {
            // Enough read: answer now and drop the connection rather than download the rest.
            finish();
            response.destroy();
          }
        });
        let done = false;
        const finish = () => {
          if (done) return;
          done = true;
          clearTimeout(timer);
          req.signal?.removeEventListener('abort', onAbort);
          if (aborted) reject(req.signal!.reason);
          else
            resolve({
              status: response.statusCode ?? 0,
              headers: response.headers,
              body: Buffer.concat(chunks),
              durationMs: elapsed(),
              truncated,
            });
        };
        response.on('end', finish);
        response.on('error', () => {
          truncated = true;
          finish();
        });
      },
    );
    req.signal?.addEventListener('abort', onAbort, { once: true });
    const timer = setTimeout(() => {
      request.destroy(new GuardedRequestError('timeout', `no response within ${req.timeoutMs} ms`, elapsed()));
    }, req.timeoutMs);
    request.on('error', (error: Error & { code?: string }) => {
      clearTimeout(timer);
      req.signal?.removeEventListener('abort', onAbort);
      if (aborted) reject(req.signal!.reason);
      else if (error instanceof GuardedRequestError) reject(error);
      else if (error.name === 'BlockedAddressError')
        reject(new GuardedRequestError('blocked', error.message, elapsed()));
      else reject(new GuardedRequestError('network', `${error.code ?? 'error'}: ${error.message}`, elapsed()));
    });
    request.end(req.body);
  });
}
