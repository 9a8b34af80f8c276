import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { discoveryChecker, parseFields, selectFields } from './discovery';
import { GoogleApiError, googleErrorBody } from './errors';
import { GMAIL_HANDLERS, GmailState, gmailIds, type GmailAnswer, type Mailbox } from './gmail';

/**
 * A local Gmail API on a loopback port, for tests and `npm start`: every request is checked against
 * gmail-v1.json before it is handled (a violation is recorded and answered 400) and every answer
 * before it is sent (a violation is recorded and answered 500 instead), so neither a client nor the
 * fake itself can quietly stray from what Google publishes.
 */

export type FaultStatus = 429 | 403 | 404 | 410 | 500 | 503;

export interface GoogleFault {
  /** A discovery method id (`gmail.users.messages.list`); every method when left out. */
  method?: string;
  /** The error to answer; without it the request is only delayed, then served. */
  status?: FaultStatus;
  /** `errors[0].reason`; each status has Google's usual one by default. */
  reason?: string;
  /** How many matching requests the fault applies to (1 by default); then it is spent. */
  times?: number;
  delayMs?: number;
  /** Seconds, sent as Retry-After. */
  retryAfter?: number;
}

export interface GoogleFakeOptions {
  /** The fake's clock (epoch ms): internalDate, watch expiration, message IDs. */
  now?: () => number;
}

export interface GoogleFake {
  /** `http://127.0.0.1:<port>`: Gmail is at `${url}/gmail/v1/...`. */
  url: string;
  close(): Promise<void>;
  addUser(user: { email: string; accessToken: string }): void;
  inject(fault: GoogleFault): void;
  /** Requests that broke gmail-v1.json (or asked for what the fake does not do), each as a sentence. */
  requestViolations: string[];
  /** Answers of the fake that broke gmail-v1.json (a bug in the fake), each as a sentence. */
  responseViolations: string[];
  clearViolations(): void;
  /** Mail arriving from outside (INBOX, UNREAD unless `labelIds` says otherwise). */
  deliver(email: string, raw: Buffer | string, labelIds?: string[]): { id: string; threadId: string };
  historyIdOf(email: string): string;
  /** Makes all history so far unavailable: history.list from an older startHistoryId answers 404. */
  expireHistory(email: string): void;
  /** The watch users.watch set up (topicName, labelIds, labelFilterBehavior, expiration), if any. */
  watchOf(email: string): Mailbox['watch'];
  /** Forgets users, mail, faults and recorded violations. */
  reset(): void;
}

const FAULTS: Record<FaultStatus, { message: string; reason: string }> = {
  429: { message: 'Resource has been exhausted (e.g. check quota).', reason: 'rateLimitExceeded' },
  403: { message: 'User-rate limit exceeded.', reason: 'userRateLimitExceeded' },
  404: { message: 'Requested entity was not found.', reason: 'notFound' },
  410: { message: 'Sync token is no longer valid, a full sync is required.', reason: 'fullSyncRequired' },
  500: { message: 'Internal error encountered.', reason: 'backendError' },
  503: { message: 'The service is currently unavailable.', reason: 'backendError' },
};

/** Bigger than any message Gmail takes (35 MB raw, a third more as base64 in JSON). */
const MAX_BODY_BYTES = 64 * 1024 * 1024;

interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const errorAnswer = (e: GoogleApiError, headers?: Record<string, string>): Answer => ({
  status: e.code,
  body: googleErrorBody(e),
  ...(headers ? { headers } : {}),
});

async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/** The OAuth access token of a request: `Authorization: Bearer`, or Google's `access_token`/`oauth_token` parameters. */
function tokenOf(req: IncomingMessage, query: URLSearchParams): string | undefined {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
  return bearer ?? query.get('access_token') ?? query.get('oauth_token') ?? undefined;
}

const AUTH_HEADERS = { 'WWW-Authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"' };

export async function startGoogleFake(options: GoogleFakeOptions = {}): Promise<GoogleFake> {
  const now = options.now ?? Date.now;
  const gmail = discoveryChecker('gmail-v1');
  const state = new GmailState({ now, newId: gmailIds(now) });
  let faults: (GoogleFault & { left: number })[] = [];
  const requestViolations: string[] = [];
  const responseViolations: string[] = [];
  const closing = new AbortController();

  function takeFault(methodId: string): GoogleFault | undefined {
    const fault = faults.find((f) => f.method === undefined || f.method === methodId);
    if (fault && --fault.left <= 0) faults = faults.filter((f) => f !== fault);
    return fault;
  }

  /** Who is calling, and which mailbox `userId` names: `me` or the caller's own address. */
  function authorize(req: IncomingMessage, query: URLSearchParams, userId: string | undefined): Mailbox {
    const token = tokenOf(req, query);
    if (!token)
      throw new GoogleApiError(
        401,
        'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        'required',
      );
    const mailbox = state.byToken(token);
    if (!mailbox)
      throw new GoogleApiError(
        401,
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        'authError',
      );
    if (userId === undefined || userId === 'me' || userId.toLowerCase() === mailbox.email.toLowerCase()) return mailbox;
    if (userId.includes('@')) throw new GoogleApiError(403, `Delegation denied for ${mailbox.email}`, 'forbidden');
    throw new GoogleApiError(400, 'Invalid user id specified in request/Delegation denied', 'invalidArgument');
  }

  async function handle(req: IncomingMessage): Promise<Answer> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const httpMethod = req.method ?? 'GET';
    const refuse = (violations: string[]): Answer => {
      requestViolations.push(...violations);
      return errorAnswer(new GoogleApiError(400, violations.join('; '), 'badRequest'));
    };

    const raw = await readBody(req);
    if (!raw) return errorAnswer(new GoogleApiError(413, 'Request payload size exceeds the limit.', 'uploadTooLarge'));
    let body: unknown;
    if (raw.length) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return refuse([`${httpMethod} ${url.pathname}: Invalid JSON payload received.`]);
      }
    }
    const violations = gmail.checkRequest({
      httpMethod,
      pathname: url.pathname,
      query: url.searchParams,
      body,
      ...(raw.length ? { contentType: req.headers['content-type'] ?? '' } : {}),
    });
    if (violations.length) return refuse(violations);
    const alt = url.searchParams.get('alt');
    if ((alt && alt !== 'json') || url.searchParams.has('callback'))
      return refuse([`${httpMethod} ${url.pathname}: the local fake answers JSON only (no alt=${alt}, no JSONP)`]);
    const matched = gmail.matchMethod(httpMethod, url.pathname)!;

    const fault = takeFault(matched.id);
    if (fault?.delayMs) await sleep(fault.delayMs, undefined, { signal: closing.signal });
    if (fault?.status) {
      const known = FAULTS[fault.status];
      const reason = fault.reason ?? known.reason;
      const message = reason === 'rateLimitExceeded' && fault.status === 403 ? 'Rate Limit Exceeded' : known.message;
      const headers = fault.retryAfter !== undefined ? { 'Retry-After': String(fault.retryAfter) } : undefined;
      return errorAnswer(new GoogleApiError(fault.status, message, reason), headers);
    }

    const handler = GMAIL_HANDLERS[matched.id];
    if (!handler) {
      const message = `${matched.id} is in gmail-v1.json but not implemented by the local fake`;
      requestViolations.push(message);
      return errorAnswer(new GoogleApiError(501, message, 'notImplemented'));
    }
    let answer: GmailAnswer;
    try {
      const mailbox = authorize(req, url.searchParams, matched.pathParams.userId);
      answer = handler({
        mailbox,
        state,
        method: matched.method,
        params: matched.pathParams,
        query: url.searchParams,
        body,
      });
    } catch (e) {
      if (e instanceof GoogleApiError) return errorAnswer(e, e.code === 401 ? AUTH_HEADERS : undefined);
      const message = `${matched.id} failed in the local fake: ${e instanceof Error ? e.stack : String(e)}`;
      responseViolations.push(message);
      return errorAnswer(new GoogleApiError(500, message, 'backendError'));
    }

    const wrong = gmail.checkResponse(matched.id, answer.body);
    if (wrong.length) {
      responseViolations.push(...wrong);
      return errorAnswer(new GoogleApiError(500, wrong.join('; '), 'backendError'));
    }
    const fields = url.searchParams.get('fields');
    const selection = fields ? parseFields(fields) : undefined;
    return { status: answer.status, body: selection ? selectFields(answer.body, selection) : answer.body };
  }

  function send(res: ServerResponse, answer: Answer, pretty: boolean): void {
    const headers: Record<string, string> = { ...answer.headers };
    if (answer.body === undefined || answer.status === 204) {
      res.writeHead(answer.status, headers).end();
      return;
    }
    const text = pretty ? JSON.stringify(answer.body, null, 2) : JSON.stringify(answer.body);
    res.writeHead(answer.status, { ...headers, 'Content-Type': 'application/json; charset=UTF-8' }).end(text);
  }

  const server = createServer((req, res) => {
    // Google pretty-prints unless told prettyPrint=false.
    const pretty = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('prettyPrint') !== 'false';
    handle(req).then(
      (answer) => send(res, answer, pretty),
      (e: unknown) => {
        if (closing.signal.aborted) return void res.destroy();
        const message = `the local fake failed: ${e instanceof Error ? e.message : String(e)}`;
        responseViolations.push(message);
        send(res, errorAnswer(new GoogleApiError(500, message, 'backendError')), pretty);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requestViolations,
    responseViolations,
    async close() {
      closing.abort();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    addUser: (user) => state.addUser(user),
    inject(fault) {
      faults.push({ ...fault, left: fault.times ?? 1 });
    },
    clearViolations() {
      requestViolations.length = 0;
      responseViolations.length = 0;
    },
    deliver: (email, raw, labelIds) => state.deliver(email, raw, labelIds),
    historyIdOf: (email) => String(state.required(email).historyId),
    expireHistory: (email) => state.required(email).expireHistory(),
    watchOf: (email) => state.required(email).watch,
    reset() {
      state.reset();
      faults = [];
      requestViolations.length = 0;
      responseViolations.length = 0;
    },
  };
}
