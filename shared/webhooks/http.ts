import type { IncomingHttpHeaders } from 'node:http';
import { env } from '#shared/config';
import type { UrlPolicy } from '#shared/net/addresses';
import { guardedRequest, GuardedRequestError, type GuardedRequest } from '#shared/net/request';

/** The deployment's URL policy (local mode allows http to loopback) and answer timeout for webhook requests. */
export const POLICY: UrlPolicy = { local: env.webhookLocalMode() };
export const TIMEOUT_MS = env.webhookTimeoutMs();

/**
 * The one HTTP client of webhooks (verification and deliveries), over the shared guarded client
 * (shared/net/request.ts): addresses resolved, checked and pinned per request, a timeout, and at
 * most `maxResponseBytes` of the answer read, so a receiver that hangs, resets or answers 10 MB
 * cannot hold a worker.
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

/** A request of the guarded client (shared/net/request.ts), as webhooks send them. */
type WebhookRequest = Omit<GuardedRequest, 'userAgent' | 'method'> & { method: 'GET' | 'POST' };

export async function webhookRequest(req: WebhookRequest): Promise<WebhookResponse> {
  try {
    const { status, headers, body, durationMs } = await guardedRequest({
      ...req,
      userAgent: 'Switchboard-Webhooks/1.0',
    });
    return { status, headers, body, durationMs };
  } catch (error) {
    if (error instanceof GuardedRequestError)
      throw new WebhookRequestError(error.kind, error.message, error.durationMs);
    throw error;
  }
}
