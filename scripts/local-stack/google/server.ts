import { createHash, randomBytes } from 'node:crypto';
import {
  createServer,
  STATUS_CODES,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CALENDAR_HANDLERS,
  CalendarState,
  changeOutside,
  expireSync as expireCalendarSync,
  type EventResource,
  type OutsideChange,
  type RecordedChannel,
} from './calendar';
import { discoveryChecker, parseFields, selectFields, type DiscoveryChecker, type MatchedMethod } from './discovery';
import { GoogleApiError, googleErrorBody } from './errors';
import { GMAIL_HANDLERS, GmailState, gmailIds, type Mailbox } from './gmail';
import { PubSub, type PushAttempt, type PushSubscription } from './pubsub';
import { startChannelPushes, type ChannelPushAttempt } from './calendar-push';
import { PEOPLE_HANDLERS, PeopleError, PeopleState, expireSync as expirePeopleSync } from './people';
import { DIRECTORY_HANDLERS, DirectoryState, type CalendarResource, type NewCalendarResource } from './directory';

/**
 * Local Gmail, Calendar and People APIs (and the Admin SDK Directory's calendar resources) on one
 * loopback port, for tests and `npm start`: the path prefix picks the API (`/gmail/v1/`,
 * `/calendar/v3/`, `/v1/`, `/admin/directory/v1/`), every request is checked against that
 * API's Discovery document before it is handled (a violation is recorded and answered 400) and every
 * answer before it is sent (a violation is recorded and answered 500 instead), so neither a client nor
 * the fake itself can quietly stray from what Google publishes. Each API's batch endpoint
 * (`/batch/gmail/v1`, `/batch/calendar/v3`, `/batch`) takes up to 100 calls of that API as one
 * multipart/mixed request and answers each as if it came alone: checked, faults included. A method
 * with `mediaUpload` (Gmail's sends, drafts, imports) also takes its message at `/upload/…`.
 */

export type FaultStatus = 429 | 403 | 404 | 410 | 500 | 503;

export interface GoogleFault {
  /** A discovery method id (`gmail.users.messages.list`, `calendar.events.list`); every method when left out. */
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
  /**
   * Changes the fake's own answer before it is checked: a deliberate bug, to prove that the check of
   * answers catches one (the answer becomes a 500 and a response violation).
   */
  mangleAnswer?: (body: unknown) => unknown;
}

export interface GoogleFakeOptions {
  /** The fake's clock (epoch ms): internalDate, watch expiration, message IDs. */
  now?: () => number;
  /**
   * An OpenID Connect userinfo endpoint (the local sign-in's, `${issuer}/me`): a token the fake does
   * not know is shown to it, and when it answers an email, that user is added with the token, as
   * Google knows every token its own sign-in issued. Without it only `addUser`'s tokens are known.
   */
  userinfoUrl?: string;
}

export interface GoogleFake {
  /** `http://127.0.0.1:<port>`: Gmail at `${url}/gmail/v1/...`, Calendar at `/calendar/v3/...`, People at `/v1/...`. */
  url: string;
  close(): Promise<void>;
  /** A user of all three APIs: a mailbox, a primary calendar (in `timeZone`, UTC by default), contacts. */
  addUser(user: { email: string; accessToken: string; timeZone?: string }): void;
  inject(fault: GoogleFault): void;
  /**
   * Pub/Sub: the push subscription of a topic (a watched mailbox's changes are POSTed to `endpoint` with a
   * token signed by the fake's key, served at /oauth2/v3/certs); every push attempt, in order; holding
   * pushes back; waiting for those under way; a token signed with the same key and other claims.
   */
  subscribe(topicName: string, subscription: PushSubscription): void;
  pushes: PushAttempt[];
  pausePushes(): void;
  resumePushes(): void;
  pushesSettled(): Promise<void>;
  signPushToken(claims: Record<string, unknown>): string;
  /** Calendar channels' notifications: every attempt (`sync` once a channel exists, `exists` after each change); waiting for those under way. */
  calendarPushes: ChannelPushAttempt[];
  calendarPushesSettled(): Promise<void>;
  /** The media uploads taken (`/upload/…`), in order: the path, `uploadType` and the media's size. */
  mediaUploads: { path: string; uploadType: string; bytes: number }[];
  /** Requests that broke their API's Discovery document (or asked for what the fake does not do), each as a sentence. */
  requestViolations: string[];
  /** Answers of the fake that broke their API's Discovery document (a bug in the fake), each as a sentence. */
  responseViolations: string[];
  clearViolations(): void;
  /** Mail arriving from outside (INBOX, UNREAD unless `labelIds` says otherwise). */
  deliver(email: string, raw: Buffer | string, labelIds?: string[]): { id: string; threadId: string };
  historyIdOf(email: string): string;
  /** Makes all history so far unavailable: history.list from an older startHistoryId answers 404. */
  expireHistory(email: string): void;
  /** The watch users.watch set up (topicName, labelIds, labelFilterBehavior, expiration), if any. */
  watchOf(email: string): Mailbox['watch'];
  /**
   * Another client's change to a calendar of `email` (`primary` or an id): an insert, a patch (an `id`
   * the calendar has) or a delete (`status: 'cancelled'`); sync tokens see it as any change. Answers
   * the event as events.get would.
   */
  calendarChangedOutside(email: string, calendarId: string, change: OutsideChange): EventResource;
  /** The channels events.watch recorded for `email` and channels.stop has not stopped (each pushes its calendar's changes). */
  channelsOf(email: string): RecordedChannel[];
  /** Makes the calendar's sync tokens so far unusable: events.list with one answers 410 fullSyncRequired. */
  expireCalendarSync(email: string, calendarId: string): void;
  /** Makes the user's contact and group sync tokens so far expired (400 FAILED_PRECONDITION, EXPIRED_SYNC_TOKEN). */
  expireContactsSync(email: string): void;
  /** One of Gmail's "other contacts" of `email` (someone it wrote to or heard from); answers its ID (`c…`). */
  addOtherContact(email: string, other: { email: string; name?: string }): string;
  /**
   * Whether a user may read the directory's calendar resources (a Workspace administrator, or a user
   * given that privilege): every user may until told otherwise; one who may not is answered 403.
   */
  setDirectoryAdmin(email: string, admin: boolean): void;
  /** A calendar resource of the Workspace's directory (Admin SDK), beside the seeded ones (three rooms, one projector). */
  addCalendarResource(resource: NewCalendarResource): CalendarResource;
  /** Forgets users, mail, calendars, contacts, faults, uploads and recorded violations; the directory goes back to its seeded resources. */
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
  /** A body sent as it is (a batch's multipart answer) instead of `body` as JSON. */
  raw?: string;
  headers?: Record<string, string>;
}

/** One HTTP call to an API: alone, or a part of a batch. */
interface Call {
  httpMethod: string;
  url: URL;
  headers: IncomingHttpHeaders;
  raw: Buffer;
}

/** The batch endpoints (each API's discovery `batchPath`) and the path prefix of the calls each takes. */
const BATCH_APIS: Record<string, string> = {
  '/batch/gmail/v1': '/gmail/v1/',
  '/batch/calendar/v3': '/calendar/v3/',
  '/batch': '/v1/',
};
/** Google's documented maximum of calls in one batch request. */
const MAX_BATCH_PARTS = 100;

interface BatchPart {
  contentId?: string;
  method: string;
  url: URL;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/**
 * The parts of a batch body: `multipart/mixed` with a boundary, each part `Content-Type:
 * application/http` holding a request line (`GET /gmail/v1/… HTTP/1.1`), its headers and body.
 * Answers a sentence for what breaks that shape.
 */
function parseBatch(contentType: string | undefined, text: string): BatchPart[] | string {
  const boundary = /^multipart\/mixed\s*;(?:.*;)?\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType ?? '');
  if (!boundary) return `a batch is multipart/mixed with a boundary, not ${contentType ?? 'no content type'}`;
  const delimiter = `--${boundary[1] ?? boundary[2]}`;
  const chunks = text.split(delimiter);
  if (chunks.length < 3 || !chunks.at(-1)!.startsWith('--'))
    return 'the batch body does not end with its closing boundary';
  const parts: BatchPart[] = [];
  for (const chunk of chunks.slice(1, -1)) {
    const [outerHead, inner] = splitHead(chunk.replace(/^\r?\n/, ''));
    const outer = headersOf(outerHead);
    if (!/^application\/http\b/i.test(String(outer['content-type'] ?? '')))
      return `each part of a batch is Content-Type: application/http (part ${parts.length + 1} is ${outer['content-type'] ?? 'without one'})`;
    const [innerHead, body] = splitHead(inner);
    const requestLine = /^([A-Z]+) (\S+)(?: HTTP\/1\.[01])?$/.exec(innerHead[0] ?? '');
    if (!requestLine)
      return `part ${parts.length + 1} of the batch does not start with a request line: ${innerHead[0] ?? ''}`;
    const id = /^<?(.*?)>?$/.exec(String(outer['content-id'] ?? ''))?.[1];
    parts.push({
      ...(id ? { contentId: id } : {}),
      method: requestLine[1]!,
      url: new URL(requestLine[2]!, 'http://127.0.0.1'),
      headers: headersOf(innerHead.slice(1)),
      body: Buffer.from(body.replace(/\r?\n$/, ''), 'utf8'),
    });
  }
  return parts;
}

/** Header lines up to the first blank line, and the rest. */
function splitHead(text: string): [string[], string] {
  const blank = /\r?\n\r?\n/.exec(text);
  if (!blank) return [text.split(/\r?\n/).filter(Boolean), ''];
  return [text.slice(0, blank.index).split(/\r?\n/), text.slice(blank.index + blank[0].length)];
}

function headersOf(lines: readonly string[]): IncomingHttpHeaders {
  const headers: IncomingHttpHeaders = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/** Google's error body; a People error also carries its google.rpc details (ErrorInfo). */
function errorAnswer(e: GoogleApiError, headers?: Record<string, string>): Answer {
  const body = googleErrorBody(e);
  const details = e instanceof PeopleError ? e.details : undefined;
  return {
    status: e.code,
    body: details ? { error: { ...body.error, details } } : body,
    ...(headers ? { headers } : {}),
  };
}

/** The parts of a multipart/related body (a media upload's), or what is wrong with it. */
function relatedParts(contentType: string, raw: Buffer): { type: string; content: Buffer }[] | string {
  if (!/^multipart\/related\b/i.test(contentType)) return `Content-Type '${contentType}' is not multipart/related`;
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType)?.[1];
  if (!boundary) return 'the multipart/related Content-Type names no boundary';
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: { type: string; content: Buffer }[] = [];
  let at = raw.indexOf(delimiter);
  if (at < 0) return 'the body has no part';
  for (;;) {
    const after = at + delimiter.length;
    if (raw.subarray(after, after + 2).toString('latin1') === '--') return parts;
    const headerEnd = raw.indexOf('\r\n\r\n', after);
    if (headerEnd < 0) return 'a part has no end of headers';
    const type = /^content-type:\s*(.+)$/im.exec(raw.subarray(after, headerEnd).toString('latin1'))?.[1]?.trim();
    const next = raw.indexOf(Buffer.from(`\r\n--${boundary}`), headerEnd + 4);
    if (next < 0) return 'the body does not close its parts';
    parts.push({ type: type ?? 'text/plain', content: raw.subarray(headerEnd + 4, next) });
    at = next + 2;
  }
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

/** The OAuth access token of a request: `Authorization: Bearer`, or Google's `access_token`/`oauth_token` parameters. */
function tokenOf(headers: IncomingHttpHeaders, query: URLSearchParams): string | undefined {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(headers.authorization ?? '')?.[1];
  return bearer ?? query.get('access_token') ?? query.get('oauth_token') ?? undefined;
}

const AUTH_HEADERS = { 'WWW-Authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"' };

/** What one API's handler is given once the request is checked and matched. */
interface Dispatch {
  headers: IncomingHttpHeaders;
  matched: MatchedMethod;
  query: URLSearchParams;
  body: unknown;
}

/** One API of the fake: the path prefix it answers, its checker and its handlers by method id. */
interface FakeApi {
  prefix: string;
  checker: DiscoveryChecker;
  implements(methodId: string): boolean;
  /** Authorizes and runs the handler; throws GoogleApiError for what Google answers as an error. */
  run(call: Dispatch): { status: number; body?: unknown };
}

export async function startGoogleFake(options: GoogleFakeOptions = {}): Promise<GoogleFake> {
  const now = options.now ?? Date.now;
  const closing = new AbortController();
  const pubsub = new PubSub(now, closing.signal);
  const gmailState = new GmailState({
    now,
    newId: gmailIds(now),
    changed: (mailbox, entry) => pubsub.mailboxChanged(mailbox, entry),
  });
  const calendarState = new CalendarState({ now });
  const channelPushes = startChannelPushes(calendarState, now, closing.signal);
  const peopleState = new PeopleState({ now });
  const directoryState = new DirectoryState();
  let faults: (GoogleFault & { left: number })[] = [];
  const requestViolations: string[] = [];
  const mediaUploads: GoogleFake['mediaUploads'] = [];
  const responseViolations: string[] = [];

  /** The first fault for the method (`batch`: the batch request itself, only by name). */
  function takeFault(methodId: string, byNameOnly = false): GoogleFault | undefined {
    const fault = faults.find((f) => (f.method === undefined && !byNameOnly) || f.method === methodId);
    if (fault && --fault.left <= 0) faults = faults.filter((f) => f !== fault);
    return fault;
  }

  /** A token unknown yet, shown to the sign-in's userinfo endpoint (see GoogleFakeOptions.userinfoUrl). */
  async function adoptToken(token: string | undefined): Promise<void> {
    if (!token || !options.userinfoUrl || gmailState.byToken(token)) return;
    const answer = await fetch(options.userinfoUrl, { headers: { authorization: `Bearer ${token}` } }).catch(
      () => undefined,
    );
    if (!answer?.ok) return;
    const email = ((await answer.json().catch(() => ({}))) as { email?: unknown }).email;
    if (typeof email !== 'string' || !email.includes('@')) return;
    calendarState.addUser(email);
    peopleState.addUser(email);
    gmailState.addUser({ email, accessToken: token });
  }

  /** The mailbox of the request's OAuth token (one token registry serves all three APIs). */
  function authenticate(headers: IncomingHttpHeaders, query: URLSearchParams): Mailbox {
    const token = tokenOf(headers, query);
    if (!token)
      throw new GoogleApiError(
        401,
        'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        'required',
      );
    const mailbox = gmailState.byToken(token);
    if (!mailbox)
      throw new GoogleApiError(
        401,
        'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.',
        'authError',
      );
    return mailbox;
  }

  /** Who is calling, and which mailbox `userId` names: `me` or the caller's own address. */
  function authorize(headers: IncomingHttpHeaders, query: URLSearchParams, userId: string | undefined): Mailbox {
    const mailbox = authenticate(headers, query);
    if (userId === undefined || userId === 'me' || userId.toLowerCase() === mailbox.email.toLowerCase()) return mailbox;
    if (userId.includes('@')) throw new GoogleApiError(403, `Delegation denied for ${mailbox.email}`, 'forbidden');
    throw new GoogleApiError(400, 'Invalid user id specified in request/Delegation denied', 'invalidArgument');
  }

  const apis: FakeApi[] = [
    {
      prefix: '/gmail/v1/',
      checker: discoveryChecker('gmail-v1'),
      implements: (id) => Object.hasOwn(GMAIL_HANDLERS, id),
      run: ({ headers, matched, query, body }) =>
        GMAIL_HANDLERS[matched.id]!({
          mailbox: authorize(headers, query, matched.pathParams.userId),
          state: gmailState,
          method: matched.method,
          params: matched.pathParams,
          query,
          body,
        }),
    },
    {
      prefix: '/calendar/v3/',
      checker: discoveryChecker('calendar-v3'),
      implements: (id) => Object.hasOwn(CALENDAR_HANDLERS, id),
      run: ({ headers, matched, query, body }) =>
        CALENDAR_HANDLERS[matched.id]!({
          account: calendarState.account(authenticate(headers, query).email)!,
          state: calendarState,
          method: matched.method,
          params: matched.pathParams,
          query,
          body,
        }),
    },
    {
      prefix: '/v1/',
      checker: discoveryChecker('people-v1'),
      implements: (id) => Object.hasOwn(PEOPLE_HANDLERS, id),
      run: ({ headers, matched, query, body }) =>
        PEOPLE_HANDLERS[matched.id]!({
          book: peopleState.book(authenticate(headers, query).email)!,
          state: peopleState,
          method: matched.method,
          params: matched.pathParams,
          query,
          body,
        }),
    },
    {
      prefix: '/admin/directory/v1/',
      checker: discoveryChecker('admin-directory_v1'),
      implements: (id) => Object.hasOwn(DIRECTORY_HANDLERS, id),
      run: ({ headers, matched, query }) =>
        DIRECTORY_HANDLERS[matched.id]!({
          state: directoryState,
          caller: authenticate(headers, query).email,
          params: matched.pathParams,
          query,
        }),
    },
  ];

  async function handle(req: IncomingMessage): Promise<Answer> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const httpMethod = req.method ?? 'GET';
    const raw = await readBody(req);
    if (!raw) return errorAnswer(new GoogleApiError(413, 'Request payload size exceeds the limit.', 'uploadTooLarge'));
    const call: Call = { httpMethod, url, headers: req.headers, raw };
    if (url.pathname.startsWith('/upload/')) {
      const upload = fromUpload(call);
      if (typeof upload === 'string') {
        requestViolations.push(`${httpMethod} ${url.pathname}: ${upload}`);
        return errorAnswer(new GoogleApiError(400, upload, 'badRequest'));
      }
      return upload.tooLarge
        ? errorAnswer(new GoogleApiError(413, 'Request payload size exceeds the limit.', 'uploadTooLarge'))
        : answerCall(upload.call);
    }
    const batchApi = httpMethod === 'POST' ? BATCH_APIS[url.pathname] : undefined;
    return batchApi ? answerBatch(call, batchApi) : answerCall(call);
  }

  /**
   * A media upload (`/upload/…?uploadType=multipart`, or `media`) of a method whose discovery entry
   * has `mediaUpload`: checked against it (its simple path, the types it accepts, its maxSize), then
   * answered as that method's JSON call with the media as the Message's `raw` (base64url), which is
   * what Gmail documents the two forms as. The metadata part is checked as that call's body.
   */
  function fromUpload(call: Call): { call: Call; tooLarge?: false } | { tooLarge: true } | string {
    const pathname = call.url.pathname.slice('/upload'.length);
    const api = apis.find((a) => pathname.startsWith(a.prefix));
    const matched = api?.checker.matchMethod(call.httpMethod, pathname);
    const upload = matched?.method.mediaUpload;
    const simple = upload?.protocols.simple;
    if (!matched || !upload || !simple) return `no method takes a media upload at ${call.url.pathname}`;
    const template = new RegExp(`^${simple.path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (!template.test(call.url.pathname)) return `${matched.id} takes uploads at ${simple.path}`;
    const uploadType = call.url.searchParams.get('uploadType');
    let metadata: Record<string, unknown> = {};
    let media: { type: string; content: Buffer };
    if (uploadType === 'media') {
      media = { type: String(call.headers['content-type'] ?? ''), content: call.raw };
    } else if (uploadType === 'multipart' && simple.multipart) {
      const parts = relatedParts(String(call.headers['content-type'] ?? ''), call.raw);
      if (typeof parts === 'string') return parts;
      if (parts.length !== 2)
        return `a multipart upload has two parts (the metadata, then the media), not ${parts.length}`;
      if (!/^application\/json\b/i.test(parts[0]!.type))
        return `the metadata part is ${parts[0]!.type}, not application/json`;
      try {
        metadata = JSON.parse(parts[0]!.content.toString('utf8')) as Record<string, unknown>;
      } catch {
        return 'the metadata part is not JSON';
      }
      media = parts[1]!;
    } else {
      return `uploadType=${uploadType ?? '(none)'}: the local fake takes media and multipart uploads`;
    }
    const accepted = upload.accept.some((pattern) =>
      new RegExp(`^${pattern.replace('*', '[^/;]+')}(;|$)`, 'i').test(media.type.trim()),
    );
    if (!accepted) return `${matched.id} takes ${upload.accept.join(', ')}, not '${media.type}'`;
    if (media.content.length > Number(upload.maxSize)) return { tooLarge: true };
    mediaUploads.push({ path: call.url.pathname, uploadType, bytes: media.content.length });
    const raw = media.content.toString('base64url');
    // The Message is the body itself (messages.send, …) or its `message` (a Draft).
    const body =
      matched.method.request?.$ref === 'Draft'
        ? { ...metadata, message: { ...((metadata.message as object | undefined) ?? {}), raw } }
        : { ...metadata, raw };
    const url = new URL(call.url);
    url.pathname = pathname;
    return {
      call: {
        httpMethod: call.httpMethod,
        url,
        headers: { ...call.headers, 'content-type': 'application/json' },
        raw: Buffer.from(JSON.stringify(body)),
      },
    };
  }

  /**
   * A batch (POST /batch/gmail/v1, /batch/calendar/v3, /batch): each part an HTTP request of that
   * API, checked and answered as if it came alone (faults included), all at once; the answer a
   * multipart/mixed of HTTP answers, each with `Content-ID: <response-…>` of its request's.
   */
  async function answerBatch(call: Call, prefix: string): Promise<Answer> {
    const refuse = (message: string): Answer => {
      requestViolations.push(`POST ${call.url.pathname}: ${message}`);
      return errorAnswer(new GoogleApiError(400, message, 'badRequest'));
    };
    const parts = parseBatch(call.headers['content-type'], call.raw.toString('utf8'));
    if (typeof parts === 'string') return refuse(parts);
    if (parts.length > MAX_BATCH_PARTS)
      return refuse(`a batch holds at most ${MAX_BATCH_PARTS} calls; this one has ${parts.length}`);
    const foreign = parts.find((p) => !p.url.pathname.startsWith(prefix));
    if (foreign)
      return refuse(`${foreign.url.pathname} is not of this batch's API (${prefix}…): each batch goes to one API`);
    const fault = takeFault('batch', true);
    if (fault?.delayMs) await sleep(fault.delayMs, undefined, { signal: closing.signal });
    if (fault?.mangleAnswer) fault.mangleAnswer(undefined);
    const answers = await Promise.all(
      parts.map((part) =>
        answerCall({
          httpMethod: part.method,
          url: part.url,
          // The outer request's headers hold for each part unless the part gives its own.
          headers: { ...call.headers, 'content-type': undefined, ...part.headers },
          raw: part.body,
        }),
      ),
    );
    const boundary = `batch_${randomBytes(9).toString('base64url')}`;
    const text = answers
      .map((answer, i) => {
        const id = parts[i]!.contentId;
        const body = answer.body === undefined || answer.status === 204 ? '' : JSON.stringify(answer.body);
        return [
          `--${boundary}`,
          'Content-Type: application/http',
          ...(id !== undefined ? [`Content-ID: <response-${id}>`] : []),
          '',
          `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? ''}`,
          ...Object.entries(answer.headers ?? {}).map(([name, value]) => `${name}: ${value}`),
          ...(body
            ? ['Content-Type: application/json; charset=UTF-8', `Content-Length: ${Buffer.byteLength(body)}`]
            : []),
          '',
          body,
          '',
        ].join('\r\n');
      })
      .join('');
    return {
      status: 200,
      raw: `${text}--${boundary}--\r\n`,
      headers: { 'Content-Type': `multipart/mixed; boundary=${boundary}` },
    };
  }

  /** One call of an API, alone or as a part of a batch. */
  async function answerCall(call: Call): Promise<Answer> {
    const { url, httpMethod, raw } = call;
    const refuse = (violations: string[]): Answer => {
      requestViolations.push(...violations);
      return errorAnswer(new GoogleApiError(400, violations.join('; '), 'badRequest'));
    };
    let body: unknown;
    if (raw.length) {
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return refuse([`${httpMethod} ${url.pathname}: Invalid JSON payload received.`]);
      }
    }
    // Google's signing keys (www.googleapis.com/oauth2/v3/certs): what verifies the pushes' tokens.
    if (httpMethod === 'GET' && url.pathname === '/oauth2/v3/certs') return { status: 200, body: pubsub.jwks() };
    const api = apis.find((a) => url.pathname.startsWith(a.prefix));
    if (!api)
      return refuse([
        `${httpMethod} ${url.pathname}: no API of the local fake has this path (Gmail /gmail/v1/, Calendar /calendar/v3/, People /v1/, their batches; the Directory's calendar resources /admin/directory/v1/)`,
      ]);
    const violations = api.checker.checkRequest({
      httpMethod,
      pathname: url.pathname,
      query: url.searchParams,
      body,
      ...(raw.length ? { contentType: call.headers['content-type'] ?? '' } : {}),
    });
    if (violations.length) return refuse(violations);
    const alt = url.searchParams.get('alt');
    if ((alt && alt !== 'json') || url.searchParams.has('callback'))
      return refuse([`${httpMethod} ${url.pathname}: the local fake answers JSON only (no alt=${alt}, no JSONP)`]);
    const matched = api.checker.matchMethod(httpMethod, url.pathname)!;

    const fault = takeFault(matched.id);
    if (fault?.delayMs) await sleep(fault.delayMs, undefined, { signal: closing.signal });
    if (fault?.status) {
      const known = FAULTS[fault.status];
      const reason = fault.reason ?? known.reason;
      const message = reason === 'rateLimitExceeded' && fault.status === 403 ? 'Rate Limit Exceeded' : known.message;
      const headers = fault.retryAfter !== undefined ? { 'Retry-After': String(fault.retryAfter) } : undefined;
      return errorAnswer(new GoogleApiError(fault.status, message, reason), headers);
    }

    if (!api.implements(matched.id)) {
      const message = `${matched.id} is in ${api.checker.doc.name}-${api.checker.doc.version}.json but not implemented by the local fake`;
      requestViolations.push(message);
      return errorAnswer(new GoogleApiError(501, message, 'notImplemented'));
    }
    await adoptToken(tokenOf(call.headers, url.searchParams));
    let answer: { status: number; body?: unknown };
    try {
      answer = api.run({ headers: call.headers, matched, query: url.searchParams, body });
    } catch (e) {
      if (e instanceof GoogleApiError) return errorAnswer(e, e.code === 401 ? AUTH_HEADERS : undefined);
      const message = `${matched.id} failed in the local fake: ${e instanceof Error ? e.stack : String(e)}`;
      responseViolations.push(message);
      return errorAnswer(new GoogleApiError(500, message, 'backendError'));
    }
    if (fault?.mangleAnswer) answer = { ...answer, body: fault.mangleAnswer(answer.body) };

    const wrong = api.checker.checkResponse(matched.id, answer.body);
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
    if (answer.raw !== undefined) {
      res.writeHead(answer.status, headers).end(answer.raw);
      return;
    }
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
    mediaUploads,
    requestViolations,
    responseViolations,
    async close() {
      closing.abort();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
    addUser(user) {
      calendarState.addUser(user.email, user.timeZone);
      peopleState.addUser(user.email);
      gmailState.addUser(user);
    },
    subscribe: (topicName, subscription) => pubsub.subscribe(topicName, subscription),
    pushes: pubsub.attempts,
    pausePushes: () => pubsub.pause(),
    resumePushes: () => pubsub.resume(),
    pushesSettled: () => pubsub.settled(),
    signPushToken: (claims) => pubsub.token(claims),
    calendarPushes: channelPushes.attempts,
    calendarPushesSettled: () => channelPushes.settled(),
    inject(fault) {
      faults.push({ ...fault, left: fault.times ?? 1 });
    },
    clearViolations() {
      requestViolations.length = 0;
      responseViolations.length = 0;
    },
    deliver: (email, raw, labelIds) => gmailState.deliver(email, raw, labelIds),
    historyIdOf: (email) => String(gmailState.required(email).historyId),
    expireHistory: (email) => gmailState.required(email).expireHistory(),
    watchOf: (email) => gmailState.required(email).watch,
    calendarChangedOutside: (email, calendarId, change) => changeOutside(calendarState, email, calendarId, change),
    channelsOf(email) {
      const address = calendarState.requiredAccount(email).email;
      return [...calendarState.channels.values()].filter((c) => c.email === address).map((c) => ({ ...c }));
    },
    expireCalendarSync: (email, calendarId) => expireCalendarSync(calendarState, email, calendarId),
    expireContactsSync: (email) => expirePeopleSync(peopleState, email),
    addOtherContact(email, other) {
      const book = peopleState.requiredBook(email);
      const id = `c${BigInt(`0x${createHash('sha256').update(other.email.toLowerCase()).digest('hex').slice(0, 15)}`)}`;
      book.others.set(other.email.toLowerCase(), {
        resourceName: `otherContacts/${id}`,
        ...(other.name ? { name: other.name } : {}),
        email: other.email,
        updated: now(),
      });
      return id;
    },
    addCalendarResource: (resource) => directoryState.add(resource),
    setDirectoryAdmin: (email, admin) => directoryState.setAdmin(email, admin),
    reset() {
      directoryState.reset();
      gmailState.reset();
      calendarState.reset();
      peopleState.reset();
      faults = [];
      mediaUploads.length = 0;
      requestViolations.length = 0;
      responseViolations.length = 0;
    },
  };
}
