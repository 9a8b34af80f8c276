import { randomUUID } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { CALENDAR_HANDLERS, CalendarState, type EventOutsideChange } from './calendar';
import { CONTACT_HANDLERS, ContactState, type ContactOutsideChange } from './contacts';
import { GraphError, graphErrorBody, UnsupportedByFakeError } from './errors';
import { GraphState, MAIL_HANDLERS, type Delivery, type Mailbox, type OutsideChange } from './mail';
import { graphChecker } from './openapi';
import { PlaceState, placeHandlers, type NewRoom, type Room } from './places';
import { SubscriptionState } from './subscriptions';

/**
 * A local Microsoft Graph v1.0 (mail, calendars, contacts and the tenant's rooms) on one loopback port, for tests and `npm start`:
 * `${url}/v1.0/me/...` and `${url}/v1.0/users/{id or userPrincipalName}/...`, a bearer token per user.
 * Every request is checked against Graph's published OpenAPI descriptions (schemas/providers/microsoft/)
 * before it is handled (a violation is recorded and answered 400 in Graph's error shape) and every answer
 * before it is sent (a violation is recorded and answered 500 instead), so neither a client nor the fake
 * itself can quietly stray from what Microsoft publishes. `POST /v1.0/$batch` takes up to 20 requests as
 * JSON and answers each as if it came alone: checked, faults included. Upload sessions of large
 * attachments take their byte ranges on a second loopback port (`uploadUrl`, as Graph's point to another
 * host), under `/upload/{session}?authtoken=…`: no OpenAPI description covers those PUTs, so they are
 * checked by hand (mail.ts GraphState.upload) and logged with the others. `/v1.0/subscriptions` keeps
 * change notifications of mailboxes' messages and POSTs them as Graph does (subscriptions.ts).
 */

export type FaultStatus = 429 | 503 | 500 | 404 | 410;

export interface GraphFault {
  /** Matched against the request's path (`/v1.0/me/messages`); every path when left out, but not the `$batch` envelope itself. */
  path?: RegExp;
  /** An HTTP method (`GET`); every method when left out. */
  method?: string;
  /** The error to answer; without it the request is only delayed (or its answer mangled), then served. */
  status?: FaultStatus;
  /** `error.code`; each status has Graph's usual one by default. */
  code?: string;
  /** How many matching requests the fault applies to (1 by default); then it is spent. */
  times?: number;
  delayMs?: number;
  /** Seconds, sent as Retry-After (429 and 503 always carry one: 1 unless said). */
  retryAfter?: number;
  /**
   * Changes the fake's own answer before it is checked: a deliberate bug, to prove that the check of
   * answers catches one (the answer becomes a 500 and a response violation).
   */
  mangleAnswer?: (body: unknown) => unknown;
}

export interface GraphFakeOptions {
  /** The fake's clock (epoch ms): received and modified times, innerError dates. */
  now?: () => number;
  /**
   * An OpenID Connect userinfo endpoint (`npm start`'s local sign-in): a token the fake does not know is
   * shown to it, and the email address it answers becomes a user with that token (a new user, or the
   * same user's new token after a refresh).
   */
  userinfoUrl?: string;
  /**
   * Milliseconds each HTTP request to Graph waits before it is answered (a `$batch` once, not again
   * per member): Graph's distance from a Lambda, for benchmarks. A fault's `delayMs` cannot stand for
   * it: the fake answers a batch's members one after another, each delayed in turn, where Graph
   * answers the batch in one round trip.
   */
  latencyMs?: number;
}

export interface Violation {
  kind: 'request' | 'response';
  message: string;
}

export interface LoggedRequest {
  method: string;
  /** Path and query, as sent (`/v1.0/me/messages?$top=2`). */
  path: string;
  status: number;
  /** Set for a request that came inside a `$batch`. */
  inBatch?: true;
}

export interface GraphFake {
  /** `http://127.0.0.1:<port>`: Graph at `${url}/v1.0/...`. */
  url: string;
  /** `http://127.0.0.1:<port>/upload`: where upload sessions' URLs point (another port, as Graph's are another host). */
  uploadUrl: string;
  close(): Promise<void>;
  /**
   * A user with a mailbox (Outlook's well-known folders, empty) and a default calendar (empty, in
   * `timeZone`, UTC unless said: what getSchedule gives as working hours' zone); answers the user's ID.
   */
  addUser(user: { email: string; accessToken: string; id?: string; displayName?: string; timeZone?: string }): {
    id: string;
  };
  /** Mail arriving from outside (Inbox, unread, unless the delivery says otherwise). */
  deliver(email: string, delivery: Delivery): { id: string; conversationId: string; internetMessageId: string };
  /**
   * Another client's change, for delta to report: to a message (read, flag, categories, move, delete;
   * answers the message's ID after it) or to an event (createEvent, updateEvent, deleteEvent, with Graph's
   * event JSON; an occurrence's ID changes or cancels that occurrence; answers the event's ID).
   */
  changeOutside(email: string, change: OutsideChange | EventOutsideChange): { id: string } | undefined;
  /** Another client's change to a contact (createContact, in the default folder unless `folder` names one; updateContact; deleteContact). */
  changeContactOutside(email: string, change: ContactOutsideChange): { id: string } | undefined;
  /** Makes every contacts/delta token of the user (every folder's) unusable: following one answers 410 syncStateNotFound. */
  expireContactDelta(email: string): void;
  /** Makes every delta and skip token of the mailbox unusable: following one answers 410 syncStateNotFound. */
  expireDelta(email: string): void;
  /** The same for the user's calendarView/delta tokens. */
  expireCalendarDelta(email: string): void;
  /** The ID of a calendar of `email` by name (any case); the default calendar when no name is given. */
  calendarId(email: string, name?: string): string;
  /** The ID of a folder of `email` by well-known name or ID (`inbox`). */
  folderId(email: string, folder: string): string;
  inject(fault: GraphFault): void;
  /** Requests that broke the descriptions (or asked for what the fake does not do) and answers of the fake that did. */
  violations(): Violation[];
  clearViolations(): void;
  /** Every request answered, in order, `$batch` members included. */
  requests(): LoggedRequest[];
  /** Subscriptions and the change and lifecycle notifications they POST (faults: duplicate, late, missed). */
  subscriptions: SubscriptionState;
  /** A room of the tenant (`GET /places/microsoft.graph.room`), after the seeded three. */
  addRoom(room: NewRoom): Room;
  /** Forgets users, mail, calendars, subscriptions, faults, violations and the request log; the rooms go back to the seeded three. */
  reset(): void;
}

const FAULTS: Record<FaultStatus, { code: string; message: string }> = {
  429: { code: 'TooManyRequests', message: 'Too many requests. Please try again later.' },
  503: { code: 'serviceNotAvailable', message: 'The service is temporarily unavailable. Please try again later.' },
  500: { code: 'generalException', message: 'An unspecified error has occurred.' },
  404: { code: 'ErrorItemNotFound', message: 'The specified object was not found in the store.' },
  410: {
    code: 'syncStateNotFound',
    message: 'The sync state is not found or has expired. Start a new sync without a token.',
  },
};

/** Bigger than any request Graph takes (sendMail with attachments is at most 4 MB of JSON; batches 20 of those). */
const MAX_BODY_BYTES = 100 * 1024 * 1024;
const JSON_TYPE = 'application/json;odata.metadata=minimal;odata.streaming=true;IEEE754Compatible=false;charset=utf-8';
const AUTH_HEADERS = {
  'WWW-Authenticate':
    'Bearer realm="", authorization_uri="https://login.microsoftonline.com/common/oauth2/authorize", client_id="00000003-0000-0000-c000-000000000000"',
};

interface Answer {
  status: number;
  /** JSON, or a Buffer sent as it is (a `$value`). */
  body?: unknown;
  headers?: Record<string, string>;
}

/** One request to Graph: alone, or a member of a `$batch`. */
interface Call {
  httpMethod: string;
  url: URL;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body; undefined when there is none. */
  body: unknown;
  contentType?: string;
  inBatch?: true;
}

interface BatchRequest {
  id: string;
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  dependsOn?: string[];
}

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

const bearerOf = (headers: IncomingHttpHeaders) => /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1];

export async function startGraphFake(options: GraphFakeOptions = {}): Promise<GraphFake> {
  const now = options.now ?? Date.now;
  const closing = new AbortController();
  const checker = graphChecker();
  const state = new GraphState({ now });
  const calendars = new CalendarState({ now });
  const contacts = new ContactState({ now });
  const places = new PlaceState();
  const PLACE_HANDLERS = placeHandlers(places);
  const subscriptions = new SubscriptionState(now, {
    messages: (userId) => {
      const mailbox = state.byUser(userId);
      return mailbox && [...mailbox.messages.values()].map((m) => [m.id, String(m.seq)] as const);
    },
    events: (userId) => {
      const owner = calendars.users.get(userId);
      return owner && [...owner.events.values()].map((e) => [e.id, e.changeKey] as const);
    },
    contacts: (userId) => {
      const owner = contacts.users.get(userId);
      return owner && [...owner.contacts.values()].map((c) => [c.id, String(c.seq)] as const);
    },
  });
  let faults: (GraphFault & { left: number })[] = [];
  const violations: Violation[] = [];
  const log: LoggedRequest[] = [];
  let base = '';
  let uploadBase = '';

  const errorAnswer = (e: GraphError, clientRequestId: string, headers?: Record<string, string>): Answer => ({
    status: e.status,
    body: graphErrorBody(e, randomUUID(), clientRequestId, now()),
    ...(headers ? { headers } : {}),
  });

  /** The first live fault for the request; the `$batch` envelope only takes a fault whose path names it. */
  function takeFault(method: string, pathname: string, envelope = false): GraphFault | undefined {
    const fault = faults.find(
      (f) =>
        (f.method === undefined || f.method.toUpperCase() === method) &&
        (f.path === undefined ? !envelope : f.path.test(pathname)),
    );
    if (fault && --fault.left <= 0) faults = faults.filter((f) => f !== fault);
    return fault;
  }

  function faultAnswer(fault: GraphFault & { status: FaultStatus }, clientRequestId: string): Answer {
    const known = FAULTS[fault.status];
    const retry = fault.retryAfter ?? (fault.status === 429 || fault.status === 503 ? 1 : undefined);
    const e = new GraphError(fault.status, fault.code ?? known.code, known.message);
    return errorAnswer(e, clientRequestId, retry !== undefined ? { 'Retry-After': String(retry) } : undefined);
  }

  /** The caller's mailbox, which must be the one `user-id` names (`me`, its ID or its userPrincipalName). */
  function authorize(headers: IncomingHttpHeaders, userId: string | undefined): Mailbox {
    const token = bearerOf(headers);
    if (!token) throw new GraphError(401, 'InvalidAuthenticationToken', 'Access token is empty.');
    const caller = state.byToken(token);
    if (!caller) throw new GraphError(401, 'InvalidAuthenticationToken', 'Access token validation failure.');
    if (userId === undefined || userId.toLowerCase() === 'me') return caller;
    const named = state.byUser(userId);
    if (!named) throw new GraphError(404, 'ErrorInvalidUser', `The requested user '${userId}' is invalid.`);
    if (named !== caller)
      throw new GraphError(403, 'ErrorAccessDenied', 'Access is denied. Check credentials and try again.');
    return caller;
  }

  /** A token unknown yet, shown to the sign-in's userinfo endpoint (see GraphFakeOptions.userinfoUrl). */
  async function adoptToken(token: string | undefined): Promise<void> {
    if (!token || !options.userinfoUrl || state.byToken(token)) return;
    const answer = await fetch(options.userinfoUrl, { headers: { authorization: `Bearer ${token}` } }).catch(
      () => undefined,
    );
    if (!answer?.ok) return;
    const email = ((await answer.json().catch(() => ({}))) as { email?: unknown }).email;
    if (typeof email !== 'string' || !email.includes('@')) return;
    const known = state.mailboxes.get(email.toLowerCase());
    if (known) known.user.accessToken = token;
    else {
      const user = state.addUser({ email, accessToken: token });
      calendars.addUser(user);
      contacts.addUser(user);
    }
  }

  /** Answers one HTTP request; a request that never reaches answerCall (the `$batch` envelope, an unreadable body) is logged here. */
  async function handle(req: IncomingMessage): Promise<Answer> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (options.latencyMs) await sleep(options.latencyMs, undefined, { signal: closing.signal });
    await adoptToken(bearerOf(req.headers));
    const answer = await answerRequest(req, url);
    if (answer.logged === undefined)
      log.push({ method: req.method ?? 'GET', path: url.pathname + url.search, status: answer.status });
    // What the request changed is notified to the subscriptions of its mailbox.
    subscriptions.sweep();
    return answer;
  }

  async function answerRequest(req: IncomingMessage, url: URL): Promise<Answer & { logged?: true }> {
    const httpMethod = (req.method ?? 'GET').toUpperCase();
    const clientRequestId = String(req.headers['client-request-id'] ?? randomUUID());
    const raw = await readBody(req);
    if (!raw)
      return errorAnswer(new GraphError(413, 'RequestEntityTooLarge', 'The request is too large.'), clientRequestId);
    const contentType = req.headers['content-type'];
    let body: unknown;
    if (raw.length && contentType !== undefined && /^text\/plain\b/i.test(contentType)) {
      // MIME in base64 (sendMail, a message created from MIME): the checker says where it is described.
      body = raw.toString('utf8');
    } else if (raw.length) {
      if (contentType !== undefined && !/^application\/json\b/i.test(contentType)) {
        const message = `${httpMethod} ${url.pathname}: the local Graph fake reads JSON bodies only, not ${contentType}`;
        violations.push({ kind: 'request', message });
        return errorAnswer(new GraphError(415, 'UnsupportedMediaType', message), clientRequestId);
      }
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        const message = `${httpMethod} ${url.pathname}: the body is not valid JSON`;
        violations.push({ kind: 'request', message });
        return errorAnswer(new GraphError(400, 'BadRequest', message), clientRequestId);
      }
    }
    const call: Call = { httpMethod, url, headers: req.headers, body, ...(contentType ? { contentType } : {}) };
    if (httpMethod === 'POST' && /^\/v1\.0\/\$batch$/i.test(url.pathname)) return answerBatch(call, clientRequestId);
    return { ...(await answerCall(call, clientRequestId)), logged: true };
  }

  /**
   * `POST /v1.0/$batch`: the envelope checked against the supplement's description (at most 20
   * requests), each request then answered in order as if it came alone (checked, faults included),
   * `dependsOn` honoured (a request whose dependency failed answers 424).
   */
  async function answerBatch(call: Call, clientRequestId: string): Promise<Answer> {
    const refuse = (messages: string[]): Answer => {
      violations.push(...messages.map((message) => ({ kind: 'request' as const, message })));
      return errorAnswer(new GraphError(400, 'BadRequest', messages.join('; ')), clientRequestId);
    };
    const problems = checker.checkRequest({
      httpMethod: 'POST',
      pathname: '/$batch',
      query: call.url.searchParams,
      body: call.body,
      ...(call.contentType !== undefined ? { contentType: call.contentType } : {}),
    });
    if (problems.length) return refuse(problems);
    const requests = (call.body as { requests: BatchRequest[] }).requests;
    const ids = requests.map((r) => r.id);
    const duplicate = ids.find((id, i) => ids.indexOf(id) !== i);
    if (duplicate !== undefined) return refuse([`$batch: request id '${duplicate}' is given twice`]);
    for (const [i, r] of requests.entries()) {
      const unknown = (r.dependsOn ?? []).find((d) => !ids.slice(0, i).includes(d));
      if (unknown !== undefined)
        return refuse([`$batch: request '${r.id}' depends on '${unknown}', which is not an earlier request`]);
      if (/^[a-z]+:/i.test(r.url))
        return refuse([`$batch: request '${r.id}' has an absolute url; urls are relative to /v1.0`]);
    }
    const fault = takeFault('POST', call.url.pathname, true);
    if (fault?.delayMs) await sleep(fault.delayMs, undefined, { signal: closing.signal });
    if (fault?.status) return faultAnswer({ ...fault, status: fault.status }, clientRequestId);

    const statusOf = new Map<string, number>();
    const responses: Record<string, unknown>[] = [];
    for (const r of requests) {
      const headers = Object.fromEntries(Object.entries(r.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]));
      const failed = (r.dependsOn ?? []).find((d) => (statusOf.get(d) ?? 0) >= 400);
      let answer: Answer;
      if (failed !== undefined) {
        answer = errorAnswer(
          new GraphError(424, 'FailedDependency', `The request depends on '${failed}', which failed.`),
          clientRequestId,
        );
      } else if (r.body !== undefined && headers['content-type'] === undefined) {
        const message = `$batch: request '${r.id}' has a body but no Content-Type header`;
        violations.push({ kind: 'request', message });
        answer = errorAnswer(new GraphError(400, 'BadRequest', message), clientRequestId);
      } else {
        const url = new URL(`/v1.0${r.url.startsWith('/') ? '' : '/'}${r.url}`, 'http://127.0.0.1');
        answer = await answerCall(
          {
            httpMethod: r.method,
            url,
            // The envelope's credentials hold for each request; its other headers do not.
            headers: { authorization: call.headers.authorization, ...headers },
            body: r.body,
            ...(headers['content-type'] !== undefined ? { contentType: headers['content-type'] } : {}),
            inBatch: true,
          },
          clientRequestId,
        );
      }
      statusOf.set(r.id, answer.status);
      const json = answer.body !== undefined && !Buffer.isBuffer(answer.body);
      responses.push({
        id: r.id,
        status: answer.status,
        headers: {
          ...(answer.body !== undefined ? { 'Content-Type': json ? JSON_TYPE : 'application/octet-stream' } : {}),
          ...answer.headers,
        },
        // Graph sends a non-JSON body of a batch member base64-encoded.
        ...(answer.body === undefined
          ? {}
          : { body: Buffer.isBuffer(answer.body) ? answer.body.toString('base64') : answer.body }),
      });
    }
    const body = fault?.mangleAnswer ? fault.mangleAnswer({ responses }) : { responses };
    const wrong = checker.checkResponse('batch', 200, body);
    if (wrong.length) {
      violations.push(...wrong.map((message) => ({ kind: 'response' as const, message })));
      return errorAnswer(new GraphError(500, 'generalException', wrong.join('; ')), clientRequestId);
    }
    return { status: 200, body };
  }

  /** One request, alone or a member of a batch: checked, faulted, served, its answer checked. */
  async function answerCall(call: Call, clientRequestId: string): Promise<Answer> {
    const answer = await serve(call, clientRequestId);
    if (answer.status >= 400) {
      // The fake's own error bodies must be Graph's ODataError too.
      const wrong = checker.checkError(answer.body);
      if (wrong.length) violations.push(...wrong.map((message) => ({ kind: 'response' as const, message })));
    }
    log.push({
      method: call.httpMethod,
      path: call.url.pathname + call.url.search,
      status: answer.status,
      ...(call.inBatch ? { inBatch: true as const } : {}),
    });
    return answer;
  }

  async function serve(call: Call, clientRequestId: string): Promise<Answer> {
    const { url, httpMethod } = call;
    const refuse = (messages: string[]): Answer => {
      violations.push(...messages.map((message) => ({ kind: 'request' as const, message })));
      return errorAnswer(new GraphError(400, 'BadRequest', messages.join('; ')), clientRequestId);
    };
    if (!/^\/v1\.0\//i.test(url.pathname))
      return refuse([`${httpMethod} ${url.pathname}: the local Graph fake serves v1.0 only, under /v1.0/`]);
    const path = url.pathname.slice('/v1.0'.length);
    const problems = checker.checkRequest({
      httpMethod,
      pathname: path,
      query: url.searchParams,
      body: call.body,
      ...(call.contentType !== undefined ? { contentType: call.contentType } : {}),
    });
    if (problems.length) return refuse(problems);
    const { operation, params } = checker.match(httpMethod, path)!;

    const fault = takeFault(httpMethod, url.pathname);
    if (fault?.delayMs) await sleep(fault.delayMs, undefined, { signal: closing.signal });
    if (fault?.status) return faultAnswer({ ...fault, status: fault.status }, clientRequestId);

    if (operation.id.startsWith('subscription_')) {
      try {
        const mailbox = authorize(call.headers, undefined);
        const answer = await subscriptions.handle({
          mailbox,
          state,
          operationId: operation.id,
          params,
          body: call.body,
          base: `${base}/v1.0`,
        });
        const wrong = checker.checkResponse(operation.id, answer.status, answer.body);
        if (wrong.length) {
          violations.push(...wrong.map((message) => ({ kind: 'response' as const, message })));
          return errorAnswer(new GraphError(500, 'generalException', wrong.join('; ')), clientRequestId);
        }
        return answer;
      } catch (e) {
        if (e instanceof GraphError) return errorAnswer(e, clientRequestId);
        throw e;
      }
    }
    const handler =
      MAIL_HANDLERS[operation.id] ??
      CALENDAR_HANDLERS[operation.id] ??
      CONTACT_HANDLERS[operation.id] ??
      PLACE_HANDLERS[operation.id];
    if (!handler) {
      const message = `${operation.id} (${httpMethod} ${operation.template}) is described but not implemented by the local Graph fake`;
      violations.push({ kind: 'request', message });
      return errorAnswer(new GraphError(501, 'NotImplemented', message), clientRequestId);
    }
    let answer: Answer;
    try {
      const mailbox = authorize(call.headers, params['user-id']);
      answer = handler({
        mailbox,
        state,
        calendars,
        contacts,
        checker,
        operation,
        params,
        query: url.searchParams,
        body: call.body,
        headers: call.headers,
        base: `${base}/v1.0`,
        path,
        uploadBase,
      });
    } catch (e) {
      if (e instanceof UnsupportedByFakeError)
        violations.push({ kind: 'request', message: `${operation.id}: ${e.message}` });
      if (e instanceof GraphError) return errorAnswer(e, clientRequestId, e.status === 401 ? AUTH_HEADERS : undefined);
      const message = `${operation.id} failed in the local Graph fake: ${e instanceof Error ? e.stack : String(e)}`;
      violations.push({ kind: 'response', message });
      return errorAnswer(new GraphError(500, 'generalException', message), clientRequestId);
    }
    if (fault?.mangleAnswer) answer = { ...answer, body: fault.mangleAnswer(answer.body) };
    const wrong = checker.checkResponse(operation.id, answer.status, answer.body);
    if (wrong.length) {
      violations.push(...wrong.map((message) => ({ kind: 'response' as const, message })));
      return errorAnswer(new GraphError(500, 'generalException', wrong.join('; ')), clientRequestId);
    }
    return answer;
  }

  function send(res: ServerResponse, answer: Answer, clientRequestId: string): void {
    const headers: Record<string, string> = {
      'request-id': randomUUID(),
      'client-request-id': clientRequestId,
      ...answer.headers,
    };
    if (answer.body === undefined) return void res.writeHead(answer.status, headers).end();
    if (Buffer.isBuffer(answer.body))
      return void res
        .writeHead(answer.status, { 'Content-Type': 'application/octet-stream', ...headers })
        .end(answer.body);
    res.writeHead(answer.status, { ...headers, 'Content-Type': JSON_TYPE }).end(JSON.stringify(answer.body));
  }

  const server = createServer((req, res) => {
    const clientRequestId = String(req.headers['client-request-id'] ?? randomUUID());
    handle(req).then(
      (answer) => {
        send(res, answer, clientRequestId);
      },
      (e: unknown) => {
        if (closing.signal.aborted) return void res.destroy();
        const message = `the local Graph fake failed: ${e instanceof Error ? e.message : String(e)}`;
        violations.push({ kind: 'response', message });
        send(res, errorAnswer(new GraphError(500, 'generalException', message), clientRequestId), clientRequestId);
      },
    );
  });
  /** The upload port: `PUT`/`DELETE /upload/{session}?authtoken=…`, checked by GraphState.upload, faults included. */
  const uploads = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const method = (req.method ?? 'GET').toUpperCase();
    const clientRequestId = String(req.headers['client-request-id'] ?? randomUUID());
    const answerUpload = async (): Promise<Answer> => {
      const raw = await readBody(req);
      if (!raw)
        return errorAnswer(new GraphError(413, 'RequestEntityTooLarge', 'The request is too large.'), clientRequestId);
      const session = /^\/upload\/([0-9a-f]+)$/.exec(url.pathname)?.[1];
      const fault = takeFault(method, url.pathname);
      if (fault?.delayMs) await sleep(fault.delayMs, undefined, { signal: closing.signal });
      if (fault?.status) return faultAnswer({ ...fault, status: fault.status }, clientRequestId);
      try {
        if (!session) throw new GraphError(404, 'ErrorItemNotFound', 'No upload session at this URL.');
        return state.upload(method, session, url.searchParams, req.headers, raw);
      } catch (e) {
        if (e instanceof GraphError) return errorAnswer(e, clientRequestId);
        throw e;
      }
    };
    answerUpload().then(
      (answer) => {
        log.push({ method, path: url.pathname, status: answer.status });
        send(res, answer, clientRequestId);
      },
      (e: unknown) => {
        if (closing.signal.aborted) return void res.destroy();
        const message = `the local Graph fake's upload failed: ${e instanceof Error ? e.message : String(e)}`;
        violations.push({ kind: 'response', message });
        send(res, errorAnswer(new GraphError(500, 'generalException', message), clientRequestId), clientRequestId);
      },
    );
  });
  const listen = (s: typeof server) =>
    new Promise<number>((resolve, reject) => {
      s.once('error', reject);
      s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port));
    });
  base = `http://127.0.0.1:${await listen(server)}`;
  uploadBase = `http://127.0.0.1:${await listen(uploads)}/upload`;

  return {
    url: base,
    uploadUrl: uploadBase,
    async close() {
      closing.abort();
      for (const s of [server, uploads]) s.closeAllConnections();
      await Promise.all([server, uploads].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    },
    addUser(user) {
      const created = state.addUser(user);
      calendars.addUser(created, user.timeZone);
      contacts.addUser(created);
      return { id: created.id };
    },
    deliver(email, delivery) {
      const delivered = state.deliver(email, delivery);
      subscriptions.sweep();
      return delivered;
    },
    changeOutside(email, change) {
      const changed =
        change.kind === 'createEvent' || change.kind === 'updateEvent' || change.kind === 'deleteEvent'
          ? calendars.changeOutside(email, change)
          : state.changeOutside(email, change);
      subscriptions.sweep();
      return changed;
    },
    expireDelta: (email) => state.required(email).expireDelta(),
    expireCalendarDelta: (email) => calendars.required(email).expireDelta(),
    changeContactOutside(email, change) {
      const changed = contacts.changeOutside(email, change);
      subscriptions.sweep();
      return changed;
    },
    expireContactDelta: (email) => contacts.required(email).expireDelta(),
    calendarId(email, name) {
      const owner = calendars.required(email);
      if (name === undefined) return owner.defaultId;
      const found = [...owner.calendars.values()].find((c) => c.name.toLowerCase() === name.toLowerCase());
      if (!found) throw new Error(`the Graph fake has no calendar '${name}' for ${email}`);
      return found.id;
    },
    folderId: (email, folder) => state.required(email).folder(folder).id,
    inject(fault) {
      faults.push({ ...fault, left: fault.times ?? 1 });
    },
    violations: () => violations.map((v) => ({ ...v })),
    clearViolations() {
      violations.length = 0;
    },
    requests: () => log.map((r) => ({ ...r })),
    subscriptions,
    addRoom: (room) => places.add(room),
    reset() {
      places.reset();
      state.reset();
      calendars.reset();
      contacts.reset();
      subscriptions.reset();
      faults = [];
      violations.length = 0;
      log.length = 0;
    },
  };
}
