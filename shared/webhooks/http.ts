import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { pinnedLookup, type Resolver, type UrlPolicy } from '#shared/webhooks/urls';

/**
 * The one HTTP client of webhooks (verification and deliveries). It connects only to addresses the
 * URL policy allows (resolved and pinned per request), gives up after `timeoutMs`, reads at most
 * `maxResponseBytes` of the answer and drops the rest, so a receiver that hangs, resets or answers
 * 10 MB cannot hold a worker.
 */
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

export interface WebhookRequest {
  method: 'GET' | 'POST';
  url: URL;
  headers?: Record<string, string>;
  body?: Buffer;
  timeoutMs: number;
  maxResponseBytes: number;
  policy: UrlPolicy;
  resolver?: Resolver;
}

export function webhookRequest(req: WebhookRequest): Promise<WebhookResponse> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve, reject) => {
    const send = req.url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      req.url,
      {
        method: req.method,
        headers: { 'user-agent': 'Switchboard-Webhooks/1.0', ...req.headers, ...(req.body ? { 'content-length': String(req.body.length) } : {}) },
        lookup: pinnedLookup(req.policy, req.resolver) as never,
        agent: false,
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
