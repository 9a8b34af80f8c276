import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { env } from '#shared/config';
import { allowedAddresses, pinnedLookup, type Resolver, type UrlPolicy } from '#shared/webhooks/urls';

/** The deployment's URL policy (local mode allows http to loopback) and answer timeout for webhook requests. */
export const POLICY: UrlPolicy = { local: env.webhookLocalMode() };
export const TIMEOUT_MS = env.webhookTimeoutMs();

/**
 * The one HTTP client of webhooks (verification and deliveries). It connects only to addresses the
 * URL policy allows (resolved and pinned per request), gives up after `timeoutMs`, reads at most
 * `maxResponseBytes` of the answer and drops the rest, so a receiver that hangs, resets or answers
 * 10 MB cannot hold a worker.
 */
/**
 * Connections are kept alive and reused per policy: a pooled socket stays connected to the address
 * that passed the check when it was opened, so reuse cannot reach a rebound address. A request with
 * its own resolver (tests) gets a fresh connection.
 */
const agents = new Map<string, { http: HttpAgent; https: HttpsAgent }>();
function agentsFor(policy: UrlPolicy) {
  const key = policy.local ? 'local' : 'public';
  let pair = agents.get(key);
  if (!pair) {
    const options = { keepAlive: true, maxSockets: 50, lookup: pinnedLookup(policy) as never };
    pair = { http: new HttpAgent(options), https: new HttpsAgent(options) };
    agents.set(key, pair);
  }
  return pair;
}

export interface WebhookResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  durationMs: number;
}

export class WebhookRequestError extends Error {
  constructor(
    readonly kind: 'timeout' | 'network' | 'blocked',
    message: string,
    readonly durationMs: number,
  ) {
    super(message);
    this.name = 'WebhookRequestError';
  }
}

interface WebhookRequest {
  method: 'GET' | 'POST';
  url: URL;
  headers?: Record<string, string>;
  body?: Buffer;
  timeoutMs: number;
  maxResponseBytes: number;
  policy: UrlPolicy;
  resolver?: Resolver;
}

export async function webhookRequest(req: WebhookRequest): Promise<WebhookResponse> {
  // Node skips `lookup` for IP literals: check those against the policy here.
  const host = req.url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    try {
      await allowedAddresses(host, req.policy);
    } catch (error) {
      throw new WebhookRequestError('blocked', (error as Error).message, 0);
    }
  }
  return send(req);
}

function send(req: WebhookRequest): Promise<WebhookResponse> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve, reject) => {
    const send = req.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      req.url,
      {
        method: req.method,
        headers: { 'user-agent': 'Switchboard-Webhooks/1.0', ...req.headers, ...(req.body ? { 'content-length': String(req.body.length) } : {}) },
        ...(req.resolver
          ? { lookup: pinnedLookup(req.policy, req.resolver) as never, agent: false }
          : { agent: req.url.protocol === 'https:' ? agentsFor(req.policy).https : agentsFor(req.policy).http }),
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          if (size >= req.maxResponseBytes) return;
          const room = req.maxResponseBytes - size;
          chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
          size += Math.min(chunk.length, room);
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
          resolve({ status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks), durationMs: elapsed() });
        };
        response.on('end', finish);
        response.on('error', () => finish());
      },
    );
    const timer = setTimeout(() => {
      request.destroy(new WebhookRequestError('timeout', `no response within ${req.timeoutMs} ms`, elapsed()));
    }, req.timeoutMs);
    request.on('error', (error: Error & { code?: string }) => {
      clearTimeout(timer);
      if (error instanceof WebhookRequestError) reject(error);
      else if (error.name === 'BlockedAddressError') reject(new WebhookRequestError('blocked', error.message, elapsed()));
      else reject(new WebhookRequestError('network', `${error.code ?? 'error'}: ${error.message}`, elapsed()));
    });
    request.end(req.body);
  });
}
