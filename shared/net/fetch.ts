import { isIP } from 'node:net';
import { classifyAddress, normalHostname, type Resolver, type UrlPolicy } from '#shared/net/addresses';
import { guardedRequest, GuardedRequestError } from '#shared/net/request';

/** What libraries that take a custom `fetch` call (oauth4webapi's `customFetch`, for one). */
export type FetchLike = (input: string | URL, init?: RequestInit) => Promise<Response>;

export interface GuardedFetchOptions {
  /** Deployed: https to public addresses only. Local mode: loopback too, and plain http to loopback only. */
  policy: UrlPolicy;
  timeoutMs: number;
  /** A longer answer is refused (GuardedRequestError, kind `network`), never cut and parsed. */
  maxResponseBytes: number;
  userAgent: string;
  /** Tests: resolve names without DNS (each request then gets its own connection). */
  resolver?: Resolver;
}

/** Statuses whose Response must have a null body. */
const NULL_BODY = new Set([204, 205, 304]);

/**
 * A fetch over the guarded client (shared/net/request.ts): the same pinned address policy as
 * webhooks, a timeout, a size cap, and no redirects followed (a 3xx comes back as the answer).
 * Plain http is allowed only in local mode and only to loopback (`localhost` or a loopback
 * literal, resolved and checked like any other name). Failures reject with GuardedRequestError
 * (`blocked`, `timeout`, `network`), or with the signal's reason when aborted.
 */
export function guardedFetch(options: GuardedFetchOptions): FetchLike {
  return async (input, init = {}) => {
    if (typeof input !== 'string' && !(input instanceof URL))
      throw new TypeError('guardedFetch takes a URL string or URL, not a Request');
    const url = new URL(input);
    const policy = checkUrl(url, options.policy);
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const body = requestBody(init.body, headers);
    const answer = await guardedRequest({
      method: (init.method ?? 'GET').toUpperCase(),
      url,
      headers,
      ...(body ? { body } : {}),
      timeoutMs: options.timeoutMs,
      // One byte more than accepted, to tell "exactly the limit" from "more than the limit".
      maxResponseBytes: options.maxResponseBytes + 1,
      policy,
      userAgent: options.userAgent,
      ...(options.resolver ? { resolver: options.resolver } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
    });
    if (answer.body.length > options.maxResponseBytes) {
      throw new GuardedRequestError(
        'network',
        `${url.host} answered more than ${options.maxResponseBytes} bytes`,
        answer.durationMs,
      );
    }
    if (answer.truncated)
      throw new GuardedRequestError('network', `${url.host} closed the connection mid-answer`, answer.durationMs);
    if (answer.status < 200 || answer.status > 599)
      throw new GuardedRequestError('network', `${url.host} answered HTTP status ${answer.status}`, answer.durationMs);
    const responseHeaders = new Headers();
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one);
    }
    return new Response(NULL_BODY.has(answer.status) ? null : answer.body, {
      status: answer.status,
      headers: responseHeaders,
    });
  };
}

/** The policy a URL is fetched under, or GuardedRequestError (`blocked`) before any connection. */
function checkUrl(url: URL, policy: UrlPolicy): UrlPolicy {
  if (url.username || url.password)
    throw new GuardedRequestError('blocked', 'URLs with credentials are not fetched', 0);
  if (url.protocol === 'https:') return policy;
  if (url.protocol === 'http:' && policy.local) {
    const host = normalHostname(url.hostname.replace(/^\[|\]$/g, ''));
    if (host === 'localhost' || (isIP(host) && classifyAddress(host) === 'loopback'))
      return { ...policy, loopbackOnly: true };
    throw new GuardedRequestError(
      'blocked',
      `plain http is allowed only to loopback (127.0.0.1, ::1, localhost) in local mode, not to ${url.host}`,
      0,
    );
  }
  throw new GuardedRequestError('blocked', `only https URLs are fetched, not ${url.protocol}//${url.host}`, 0);
}

function requestBody(body: RequestInit['body'], headers: Record<string, string>): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof URLSearchParams) {
    headers['content-type'] ??= 'application/x-www-form-urlencoded;charset=UTF-8';
    return Buffer.from(body.toString());
  }
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  if (ArrayBuffer.isView(body)) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  throw new TypeError('guardedFetch sends only string, URLSearchParams or byte bodies');
}
