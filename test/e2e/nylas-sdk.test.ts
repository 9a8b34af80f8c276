import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Nylas, {
  AvailabilityMethod,
  CredentialType,
  NylasApiError,
  NylasOAuthError,
  WebhookTriggers,
  type Booking,
  type CodeExchangeResponse,
  type ConfigParticipant,
  type Configuration,
  type Connector,
  type Contact,
  type CreateAgentAccountRequest,
  type Credential,
  type Domain,
  type Draft,
  type Folder,
  type Grant,
  type Message,
  type Provider,
  type RedirectUri,
  type Thread,
  type UpdateGrantRequest,
  type WebhookWithSecret,
} from 'nylas';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { freePort } from '../../scripts/local-stack/index';
import { startDnsServer, type DnsServer } from '../support/dns-server';
import { ctrlC, groupAlive, npmStart, type Started } from '../support/npm-start';
import { followLogin } from '../support/oidc-login';

/**
 * The official Node SDK of the published contract (`nylas`), unchanged, against `npm start`: only its
 * base URL and API key point at Switchboard. Every step is its own test so that one failure does not
 * hide the others; a step whose prerequisite failed says so. When a step fails, its error lists every
 * HTTP exchange the SDK made during the step (method, URL, request body, status, response body).
 * Hosted OAuth runs against the local OpenID Connect server npm start registers as the google and
 * microsoft connectors; only the browser's part (sign-in and consent) is played by followLogin. The
 * grants it connects are served live: google's by the local Google fake, microsoft's by the local
 * Microsoft Graph fake, each its connector's api_base_url.
 */

// ---------------------------------------------------------------------------------------------------
// What the SDK sends and receives, recorded for the failure messages. The SDK calls the global fetch
// with a Request; the wrapper reads copies of both bodies and hands the original on untouched.

interface Exchange {
  method: string;
  url: string;
  requestBody?: string;
  status?: number;
  responseBody?: string;
  error?: string;
}

const exchanges: Exchange[] = [];
let apiBase = '';
const realFetch = globalThis.fetch;

function printable(text: string, contentType: string | null): string {
  if (contentType && !/json|text/.test(contentType)) return `<${Buffer.byteLength(text)} bytes of ${contentType}>`;
  return text.length > 3000 ? `${text.slice(0, 3000)}… (${text.length} characters)` : text;
}

function recordingFetch(input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]): Promise<Response> {
  const request = input instanceof Request ? input : new Request(input, init);
  if (!apiBase || !request.url.startsWith(apiBase)) return realFetch(input, init);
  const entry: Exchange = { method: request.method, url: request.url.slice(apiBase.length) };
  exchanges.push(entry);
  return (async () => {
    if (request.body) entry.requestBody = printable(await request.clone().text(), request.headers.get('content-type'));
    try {
      const response = await realFetch(request, init);
      entry.status = response.status;
      entry.responseBody = printable(await response.clone().text(), response.headers.get('content-type'));
      return response;
    } catch (error) {
      entry.error = String(error);
      throw error;
    }
  })();
}

function describeExchanges(from: number): string {
  const list = exchanges.slice(from);
  if (!list.length) return '(no HTTP request was sent)';
  return list
    .map((e) =>
      [
        `> ${e.method} ${e.url}`,
        e.requestBody !== undefined ? `> ${e.requestBody}` : '',
        e.error ? `< ${e.error}` : `< ${e.status} ${e.responseBody ?? ''}`,
      ]
        .filter(Boolean)
        .join('\n'),
    )
    .join('\n');
}

/** One step of the flow, as its own test; its failure message carries the step's HTTP exchanges. */
function step(name: string, body: () => Promise<void>, timeout = 60_000): void {
  it(
    name,
    async () => {
      const from = exchanges.length;
      try {
        await body();
      } catch (error) {
        const log = `\n--- HTTP exchanges of this step ---\n${describeExchanges(from)}`;
        if (error instanceof NylasApiError) {
          throw new Error(`SDK threw NylasApiError ${error.statusCode} (${error.type}): ${error.message}${log}`, {
            cause: error,
          });
        }
        if (error instanceof NylasOAuthError) {
          throw new Error(
            `SDK threw NylasOAuthError ${error.statusCode} (${error.error}): ${error.errorDescription}${log}`,
            { cause: error },
          );
        }
        if (error instanceof Error) {
          error.message += log;
          throw error;
        }
        throw new Error(`${String(error)}${log}`);
      }
    },
    timeout,
  );
}

/** A value an earlier step should have produced. */
function need<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`prerequisite missing: ${what} (an earlier step failed)`);
  return value;
}

/** The ID of a mailbox's folder with the \\Trash attribute. */
async function trashFolderId(grantId: string): Promise<string> {
  const trash = (await nylas.folders.list({ identifier: grantId })).data.find((f) => f.attributes?.includes('\\Trash'));
  return need(trash, 'a folder with the \\Trash attribute').id;
}

/** Retries until the check passes: copies of a send reach other Agent Accounts through the jobs worker. */
async function eventually<T>(check: () => Promise<T>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function readAll(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks);
}

// ---------------------------------------------------------------------------------------------------
// A webhook endpoint on loopback: answers the verification GET with the challenge, 200s every POST.

interface HookReceiver {
  url: string;
  challenges: string[];
  close(): Promise<void>;
}

async function startHookReceiver(): Promise<HookReceiver> {
  const challenges: string[] = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const challenge = url.searchParams.get('challenge');
    if (req.method === 'GET' && challenge !== null) {
      challenges.push(challenge);
      res
        .writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(challenge) })
        .end(challenge);
      return;
    }
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks/nylas`,
    challenges,
    close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  };
}

// ---------------------------------------------------------------------------------------------------

const run = randomBytes(4).toString('hex');
const DOMAIN = 'agents.example.com';
const emailA = `agent-${run}@${DOMAIN}`;
const emailB = `agent-${run}-b@${DOMAIN}`;
const external = `someone-${run}@example.net`;
const subjectToAgent = `Quarterly numbers ${run}`;
const subjectToExternal = `Hello outside ${run}`;
const subjectWithAttachment = `Report attached ${run}`;
const attachmentBytes = Buffer.from(`Hello from the attachment ${run}\n`, 'utf8');

let started: Started | undefined;
let receiver: HookReceiver | undefined;
let nylas: Nylas;
let apiKey: string | undefined;
/** The DNS server npm start's domain verification reads through (DNS_RESOLVERS). */
let dns: DnsServer | undefined;

// What the steps produce for later ones.
let grantA: Grant | undefined;
let grantB: Grant | undefined;
let sentToAgent: Message | undefined;
let receivedByB: Message | undefined;
let draft: Draft | undefined;
let thread: Thread | undefined;
let folder: Folder | undefined;
let contact: Contact | undefined;
let contactGroupId: string | undefined;
let sentWithAttachment: Message | undefined;
let receivedAttachment: { messageId: string; attachmentId: string } | undefined;
let webhook: WebhookWithSecret | undefined;
type StoredConfiguration = Configuration & { id: string };
let publicConfig: StoredConfiguration | undefined;
let privateConfig: StoredConfiguration | undefined;
let pendingBooking: Booking | undefined;
/** Where the scheduler steps' exchanges start, for the check that none was answered 4xx. */
let schedulerFrom: number | undefined;
const DAY = 86_400;
/** Midnight UTC, `days` from today. */
const midnight = (days: number) => (Math.floor(Date.now() / 1000 / DAY) + days) * DAY;
const schedulerGuest = { name: 'Gus Guest', email: `guest-${run}@example.net` };

// Connected accounts: the application, its redirect URIs, connectors and credentials, hosted OAuth.
/** The application ID, printed by npm start; the SDK's OAuth calls take it as clientId. */
let applicationId: string | undefined;
/** The redirect URI the hosted OAuth steps register and use; never fetched (followLogin stops there). */
const redirectUri = `http://localhost:9000/oauth/exchange/${run}`;
let oauthRedirect: RedirectUri | undefined;
let otherRedirect: RedirectUri | undefined;
/** A connector the steps create for a provider npm start does not seed; the SDK's Provider union has no 'yahoo', the contract has. */
const YAHOO = 'yahoo' as Provider;
let connectorCredential: Credential | undefined;
const googleUser = `ada-${run}@gmail.com`;
const microsoftUser = `bo-${run}@outlook.com`;
let googleTokens: CodeExchangeResponse | undefined;
let microsoftTokens: CodeExchangeResponse | undefined;
let refreshedTokens: CodeExchangeResponse | undefined;
/** Where the connected-account steps' exchanges start, and the one request that is meant to be refused. */
let connectedFrom: number | undefined;
let deliberate401: number | undefined;

/** The browser's part: from the SDK's authorization URL through sign-in and consent to the redirect URI; its code, after checking state. */
async function signIn(url: string, login: string, state: string): Promise<string> {
  const back = await followLogin(url, { login, stopAt: (u) => `${u.origin}${u.pathname}` === redirectUri });
  expect(back.searchParams.get('error')).toBeNull();
  expect(back.searchParams.get('state')).toBe(state);
  return need(back.searchParams.get('code') ?? undefined, 'a code on the redirect URI');
}

/** The body of the last token request the SDK sent, as the server received it. */
function lastTokenRequest(): Record<string, unknown> {
  const sent = exchanges.filter((e) => e.method === 'POST' && e.url === '/v3/connect/token').at(-1);
  return JSON.parse(need(sent?.requestBody, 'a token request')) as Record<string, unknown>;
}

/** A client that authenticates with an access token instead of the API key. */
const asToken = (accessToken: string) => new Nylas({ apiKey: accessToken, apiUri: apiBase });

beforeAll(async () => {
  dns = await startDnsServer();
  const ports = {
    PORT: await freePort(),
    LAMBDA_PORT: await freePort(),
    DYNAMODB_PORT: await freePort(),
    SQS_PORT: await freePort(),
    SMTP_PORT: await freePort(),
  };
  started = await npmStart({
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    API_KEY: `sdk-e2e-${run}`,
    // A scheduled send due 16 s ahead (explicit configuration; the same path as 60 s).
    SCHEDULED_SEND_MIN_LEAD_SECONDS: '15',
    DNS_RESOLVERS: dns.address,
  });
  const baseUrl = /Base URL\s+(\S+)/.exec(started.output())![1]!;
  apiKey = /API key\s+(\S+)/.exec(started.output())![1]!;
  expect(baseUrl).toBe(`http://127.0.0.1:${ports.PORT}`);
  expect(apiKey).toBe(`sdk-e2e-${run}`);
  apiBase = baseUrl;
  globalThis.fetch = recordingFetch as typeof fetch;
  receiver = await startHookReceiver();
  // The only change from a client of the hosted API: base URL and key.
  nylas = new Nylas({ apiKey, apiUri: baseUrl });
}, 180_000);

afterAll(async () => {
  globalThis.fetch = realFetch;
  // SDK_E2E_LOG=<file> keeps every exchange of the run, and <file>.npm-start npm start's console, for
  // reading what the API answered and why.
  if (process.env.SDK_E2E_LOG) {
    writeFileSync(process.env.SDK_E2E_LOG, `${describeExchanges(0)}\n`);
    if (started) writeFileSync(`${process.env.SDK_E2E_LOG}.npm-start`, started.output());
  }
  await receiver?.close();
  await dns?.close();
  if (started && groupAlive(started.child.pid!)) await ctrlC(started);
}, 60_000);

describe('the official nylas SDK against npm start', () => {
  // ------------------------------------------------------------------------------------------- grants
  step('auth.customAuthentication creates an Agent Account (provider nylas, name, settings.email)', async () => {
    // `name` is in the contract's request body; the SDK's CreateAgentAccountRequest type omits it but sends it.
    const requestBody: CreateAgentAccountRequest & { name: string } = {
      provider: 'nylas',
      name: 'Sales Agent',
      settings: { email: emailA },
    };
    const created = await nylas.auth.customAuthentication({ requestBody });
    expect(typeof created.requestId).toBe('string');
    expect(created.data).toMatchObject({ provider: 'nylas', email: emailA, grantStatus: 'valid', name: 'Sales Agent' });
    expect(created.data.id).toEqual(expect.any(String));
    expect(created.data.createdAt).toEqual(expect.any(Number));
    expect(created.data.scope).toEqual(expect.any(Array));
    grantA = created.data;
  });

  step('auth.customAuthentication creates a second Agent Account (the recipient)', async () => {
    const created = await nylas.auth.customAuthentication({
      requestBody: { provider: 'nylas', settings: { email: emailB } },
    });
    expect(created.data).toMatchObject({ provider: 'nylas', email: emailB, grantStatus: 'valid' });
    expect(created.data.id).not.toBe(grantA?.id);
    grantB = created.data;
  });

  step('grants.find', async () => {
    const a = need(grantA, 'grant A');
    const found = await nylas.grants.find({ grantId: a.id });
    expect(found.data).toMatchObject({
      id: a.id,
      email: emailA,
      provider: 'nylas',
      grantStatus: 'valid',
      name: 'Sales Agent',
    });
    expect(typeof found.requestId).toBe('string');
  });

  step('grants.list: data array, filters, nextCursor paging', async () => {
    const a = need(grantA, 'grant A');
    const b = need(grantB, 'grant B');
    const all = await nylas.grants.list();
    expect(Array.isArray(all.data)).toBe(true);
    expect(all.data.map((g) => g.id)).toEqual(expect.arrayContaining([a.id, b.id]));
    expect(all.nextCursor).toBeUndefined();

    const byEmail = await nylas.grants.list({ queryParams: { email: emailB } });
    expect(byEmail.data.map((g) => g.id)).toEqual([b.id]);

    // The SDK pages grants by limit and offset (its ListGrantsQueryParams has no page token).
    const first = await nylas.grants.list({ queryParams: { limit: 1 } });
    const second = await nylas.grants.list({ queryParams: { limit: 1, offset: 1 } });
    expect(first.data).toHaveLength(1);
    expect(second.data).toHaveLength(1);
    expect([first.data[0]!.id, second.data[0]!.id].sort()).toEqual([a.id, b.id].sort());
  });

  step('grants.update (PATCH)', async () => {
    const a = need(grantA, 'grant A');
    // The SDK's UpdateGrantRequest names only `settings` and `scope`, which an Agent Account refuses on
    // purpose (README, "Differences from the published contract"); the SDK sends any field it is given.
    const requestBody = { externalId: `crm-${run}` } as UpdateGrantRequest;
    const updated = await nylas.grants.update({ grantId: a.id, requestBody });
    expect(updated.data).toMatchObject({ id: a.id, email: emailA });
    expect((updated.data as Grant & { externalId?: string }).externalId).toBe(`crm-${run}`);
    expect(updated.data.updatedAt).toEqual(expect.any(Number));
  });

  // ----------------------------------------------------------------------------------------- messages
  step('messages.send to another Agent Account', async () => {
    const a = need(grantA, 'grant A');
    const sent = await nylas.messages.send({
      identifier: a.id,
      requestBody: {
        to: [{ name: 'Agent B', email: emailB }],
        subject: subjectToAgent,
        body: '<p>Numbers are up.</p>',
      },
    });
    expect(sent.data.id).toEqual(expect.any(String));
    expect(sent.data).toMatchObject({ grantId: a.id, subject: subjectToAgent });
    expect(sent.data.to.map((r) => r.email)).toEqual([emailB]);
    sentToAgent = sent.data;
  });

  step('messages.send to an external address', async () => {
    const a = need(grantA, 'grant A');
    const sent = await nylas.messages.send({
      identifier: a.id,
      requestBody: {
        to: [{ email: external }],
        cc: [{ email: emailB }],
        subject: subjectToExternal,
        body: 'Plain hello',
      },
    });
    expect(sent.data.id).toEqual(expect.any(String));
    expect(sent.data).toMatchObject({ grantId: a.id, subject: subjectToExternal });
    expect(sent.data.to.map((r) => r.email)).toEqual([external]);
  });

  step(
    'messages.send with sendAt and useDraft schedules; listScheduledMessages, findScheduledMessage, stopScheduledMessage',
    async () => {
      const a = need(grantA, 'grant A');
      const sendAt = Math.floor(Date.now() / 1000) + 600;
      const scheduled = await nylas.messages.send({
        identifier: a.id,
        requestBody: { to: [{ email: external }], subject: `Scheduled ${run}`, body: 'Later', sendAt, useDraft: true },
      });
      const scheduleId = (scheduled.data as unknown as { scheduleId: string }).scheduleId;
      expect(scheduleId).toMatch(/^sch_/);
      expect(scheduled.data).toMatchObject({ grantId: a.id, subject: `Scheduled ${run}` });
      const listed = await nylas.messages.listScheduledMessages({ identifier: a.id });
      expect(listed.data as unknown as { scheduleId: string; status: { code: string } }[]).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ scheduleId, status: expect.objectContaining({ code: 'pending' }) }),
        ]),
      );
      const found = await nylas.messages.findScheduledMessage({ identifier: a.id, scheduleId });
      expect(found.data).toMatchObject({ scheduleId, status: { code: 'pending' }, closeTime: sendAt });
      const stopped = await nylas.messages.stopScheduledMessage({ identifier: a.id, scheduleId });
      expect(stopped.data.message).toContain('cancelled');
      expect((await nylas.messages.findScheduledMessage({ identifier: a.id, scheduleId })).data).toMatchObject({
        status: { code: 'cancelled' },
      });
    },
  );

  step(
    'a scheduled message leaves after its sendAt through the scheduled-send worker',
    async () => {
      const a = need(grantA, 'grant A');
      const sendAt = Math.floor(Date.now() / 1000) + 20;
      const scheduled = await nylas.messages.send({
        identifier: a.id,
        requestBody: { to: [{ email: emailB }], subject: `Soon ${run}`, body: 'Now', sendAt },
      });
      const scheduleId = (scheduled.data as unknown as { scheduleId: string }).scheduleId;
      await vi.waitFor(
        async () =>
          expect((await nylas.messages.findScheduledMessage({ identifier: a.id, scheduleId })).data).toMatchObject({
            status: { code: 'success' },
          }),
        {
          timeout: 60_000,
          interval: 500,
        },
      );
      const sent = await nylas.messages.find({ identifier: a.id, messageId: scheduled.data.id });
      expect(sent.data.folders).toEqual(['sent']);
      expect(sent.data.date).toBeGreaterThanOrEqual(sendAt);
    },
    90_000,
  );

  step('messages.list (recipient by email identifier; sender paged by nextCursor)', async () => {
    const a = need(grantA, 'grant A');
    need(sentToAgent, 'the message sent to B');
    // The recipient's copy arrives through the jobs worker.
    const inbox = await eventually(async () => {
      const page = await nylas.messages.list({ identifier: emailB, queryParams: { subject: subjectToAgent } });
      expect(page.data).toHaveLength(1);
      return page;
    });
    const message = inbox.data[0]!;
    expect(message).toMatchObject({ object: 'message', subject: subjectToAgent, unread: true });
    expect(message.grantId).toBe(need(grantB, 'grant B').id);
    expect(message.from?.[0]?.email).toBe(emailA);
    expect(Array.isArray(message.folders)).toBe(true);
    expect(inbox.nextCursor).toBeUndefined();
    receivedByB = message;

    // The sender has both sent messages: two pages of one.
    const first = await nylas.messages.list({ identifier: a.id, queryParams: { limit: 1 } });
    expect(first.data).toHaveLength(1);
    expect(first.nextCursor).toEqual(expect.any(String));
    const subjects: string[] = [];
    for await (const page of nylas.messages.list({ identifier: a.id, queryParams: { limit: 1 } }))
      subjects.push(...page.data.map((m) => m.subject ?? ''));
    expect(subjects).toEqual(expect.arrayContaining([subjectToAgent, subjectToExternal]));
    expect(new Set(subjects).size).toBe(subjects.length);
  });

  step('messages.find', async () => {
    const b = need(grantB, 'grant B');
    const message = need(receivedByB, "B's copy of the message");
    const found = await nylas.messages.find({ identifier: b.id, messageId: message.id });
    expect(found.data).toMatchObject({ id: message.id, grantId: b.id, object: 'message', subject: subjectToAgent });
    expect(found.data.body).toContain('Numbers are up.');
    expect(found.data.from?.[0]?.email).toBe(emailA);
    expect(found.data.threadId).toEqual(expect.any(String));
    expect(found.data.date).toEqual(expect.any(Number));
  });

  step('messages.update (unread, starred)', async () => {
    const b = need(grantB, 'grant B');
    const message = need(receivedByB, "B's copy of the message");
    const updated = await nylas.messages.update({
      identifier: b.id,
      messageId: message.id,
      requestBody: { unread: false, starred: true },
    });
    expect(updated.data).toMatchObject({ id: message.id, unread: false, starred: true });
    const found = await nylas.messages.find({ identifier: b.id, messageId: message.id });
    expect(found.data).toMatchObject({ unread: false, starred: true });
  });

  // ------------------------------------------------------------------------------------------ threads
  step('threads.list (data array, nextCursor paging)', async () => {
    const a = need(grantA, 'grant A');
    need(sentToAgent, 'the message sent to B');
    const all = await nylas.threads.list({ identifier: a.id });
    expect(Array.isArray(all.data)).toBe(true);
    const mine = all.data.find((t) => t.subject === subjectToAgent);
    expect(mine, JSON.stringify(all.data)).toBeDefined();
    expect(mine).toMatchObject({ object: 'thread', grantId: a.id });
    expect(mine!.messageIds).toContain(sentToAgent!.id);
    expect(mine!.participants.map((p) => p.email)).toEqual(expect.arrayContaining([emailB]));
    expect(mine!.latestDraftOrMessage?.id).toEqual(expect.any(String));
    expect(all.nextCursor).toBeUndefined();
    thread = mine;

    const first = await nylas.threads.list({ identifier: a.id, queryParams: { limit: 1 } });
    expect(first.data).toHaveLength(1);
    expect(first.nextCursor).toEqual(expect.any(String));
    const seen: string[] = [];
    for await (const page of nylas.threads.list({ identifier: a.id, queryParams: { limit: 1 } }))
      seen.push(...page.data.map((t) => t.id));
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(new Set(seen).size).toBe(seen.length);
  });

  step('threads.find', async () => {
    const a = need(grantA, 'grant A');
    const t = need(thread, 'a thread of A');
    const found = await nylas.threads.find({ identifier: a.id, threadId: t.id });
    expect(found.data).toMatchObject({ id: t.id, object: 'thread', grantId: a.id, subject: subjectToAgent });
    expect(found.data.messageIds).toEqual(t.messageIds);
  });

  step('threads.update (starred, unread)', async () => {
    const a = need(grantA, 'grant A');
    const t = need(thread, 'a thread of A');
    const updated = await nylas.threads.update({
      identifier: a.id,
      threadId: t.id,
      requestBody: { starred: true, unread: false },
    });
    expect(updated.data).toMatchObject({ id: t.id, starred: true, unread: false });
  });

  step('threads.destroy', async () => {
    const b = need(grantB, 'grant B');
    // B's copy of the message A sent to the outside world with B in cc.
    const threads = await eventually(async () => {
      const page = await nylas.threads.list({ identifier: b.id, queryParams: { subject: subjectToExternal } });
      expect(page.data).toHaveLength(1);
      return page;
    });
    const t = threads.data[0]!;
    const destroyed = await nylas.threads.destroy({ identifier: b.id, threadId: t.id });
    expect(typeof destroyed.requestId).toBe('string');
    // An Agent Account's DELETE moves the thread's messages to the trash.
    const found = await nylas.threads.find({ identifier: b.id, threadId: t.id });
    expect(found.data.folders).toEqual([await trashFolderId(b.id)]);
  });

  // ------------------------------------------------------------------------------------------- drafts
  step('drafts.create', async () => {
    const a = need(grantA, 'grant A');
    const created = await nylas.drafts.create({
      identifier: a.id,
      requestBody: { to: [{ email: emailB }], subject: `Draft ${run}`, body: '<p>First version</p>' },
    });
    expect(created.data.id).toEqual(expect.any(String));
    expect(created.data).toMatchObject({ object: 'draft', grantId: a.id, subject: `Draft ${run}` });
    expect(created.data.to.map((r) => r.email)).toEqual([emailB]);
    draft = created.data;
  });

  step('drafts.list', async () => {
    const a = need(grantA, 'grant A');
    const d = need(draft, 'a draft');
    const drafts = await nylas.drafts.list({ identifier: a.id });
    expect(Array.isArray(drafts.data)).toBe(true);
    expect(drafts.data.map((x) => x.id)).toContain(d.id);
    expect(drafts.nextCursor).toBeUndefined();
  });

  step('drafts.find', async () => {
    const a = need(grantA, 'grant A');
    const d = need(draft, 'a draft');
    const found = await nylas.drafts.find({ identifier: a.id, draftId: d.id });
    expect(found.data).toMatchObject({ id: d.id, object: 'draft', subject: `Draft ${run}` });
    expect(found.data.body).toContain('First version');
  });

  step('drafts.update', async () => {
    const a = need(grantA, 'grant A');
    const d = need(draft, 'a draft');
    const updated = await nylas.drafts.update({
      identifier: a.id,
      draftId: d.id,
      requestBody: { subject: `Draft ${run} (edited)`, body: '<p>Second version</p>' },
    });
    expect(updated.data).toMatchObject({ id: d.id, subject: `Draft ${run} (edited)` });
    const found = await nylas.drafts.find({ identifier: a.id, draftId: d.id });
    expect(found.data.subject).toBe(`Draft ${run} (edited)`);
    expect(found.data.body).toContain('Second version');
  });

  step('drafts.send', async () => {
    const a = need(grantA, 'grant A');
    const d = need(draft, 'a draft');
    const sent = await nylas.drafts.send({ identifier: a.id, draftId: d.id });
    expect(sent.data.id).toEqual(expect.any(String));
    expect(sent.data).toMatchObject({ grantId: a.id, subject: `Draft ${run} (edited)` });
    expect(sent.data.to.map((r) => r.email)).toEqual([emailB]);
  });

  step('drafts.destroy', async () => {
    const a = need(grantA, 'grant A');
    const created = await nylas.drafts.create({
      identifier: a.id,
      requestBody: { to: [{ email: external }], subject: `Throwaway ${run}` },
    });
    const destroyed = await nylas.drafts.destroy({ identifier: a.id, draftId: created.data.id });
    expect(typeof destroyed.requestId).toBe('string');
    const drafts = await nylas.drafts.list({ identifier: a.id });
    expect(drafts.data.map((x) => x.id)).not.toContain(created.data.id);
  });

  // ------------------------------------------------------------------------------------------ folders
  step('folders.list', async () => {
    const a = need(grantA, 'grant A');
    const folders = await nylas.folders.list({ identifier: a.id });
    expect(Array.isArray(folders.data)).toBe(true);
    expect(folders.data.length).toBeGreaterThan(0);
    for (const f of folders.data) {
      expect(f.id).toEqual(expect.any(String));
      expect(f.name).toEqual(expect.any(String));
      expect(f.grantId).toBe(a.id);
    }
    expect(folders.data.some((f) => f.systemFolder === true)).toBe(true);
    expect(folders.nextCursor).toBeUndefined();
  });

  step('folders.create', async () => {
    const a = need(grantA, 'grant A');
    const created = await nylas.folders.create({ identifier: a.id, requestBody: { name: `Clients ${run}` } });
    expect(created.data.id).toEqual(expect.any(String));
    expect(created.data).toMatchObject({ name: `Clients ${run}`, grantId: a.id, object: 'folder' });
    folder = created.data;
    const folders = await nylas.folders.list({ identifier: a.id });
    expect(folders.data.map((f) => f.id)).toContain(created.data.id);
  });

  step('folders.find', async () => {
    const a = need(grantA, 'grant A');
    const f = need(folder, 'a created folder');
    const found = await nylas.folders.find({ identifier: a.id, folderId: f.id });
    expect(found.data).toMatchObject({ id: f.id, name: `Clients ${run}`, grantId: a.id });
  });

  step('folders.update', async () => {
    const a = need(grantA, 'grant A');
    const f = need(folder, 'a created folder');
    const updated = await nylas.folders.update({
      identifier: a.id,
      folderId: f.id,
      requestBody: { name: `Key clients ${run}` },
    });
    expect(updated.data).toMatchObject({ id: f.id, name: `Key clients ${run}` });
  });

  step('messages.update moves a message into a folder (folders)', async () => {
    const b = need(grantB, 'grant B');
    const message = need(receivedByB, "B's copy of the message");
    const created = await nylas.folders.create({ identifier: b.id, requestBody: { name: `Archive ${run}` } });
    const updated = await nylas.messages.update({
      identifier: b.id,
      messageId: message.id,
      requestBody: { folders: [created.data.id] },
    });
    expect(updated.data.folders).toEqual([created.data.id]);
  });

  step('folders.destroy', async () => {
    const a = need(grantA, 'grant A');
    const f = need(folder, 'a created folder');
    const destroyed = await nylas.folders.destroy({ identifier: a.id, folderId: f.id });
    expect(typeof destroyed.requestId).toBe('string');
    const folders = await nylas.folders.list({ identifier: a.id });
    expect(folders.data.map((x) => x.id)).not.toContain(f.id);
  });

  // ----------------------------------------------------------------------------------------- contacts
  step('contacts.create (with a group made through POST /contacts/groups, which the SDK has no call for)', async () => {
    const a = need(grantA, 'grant A');
    const made = await fetch(`${apiBase}/v3/grants/${a.id}/contacts/groups`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name: `Friends ${run}` }),
    });
    expect(made.status).toBe(200);
    contactGroupId = ((await made.json()) as { data: { id: string } }).data.id;
    const created = await nylas.contacts.create({
      identifier: a.id,
      requestBody: {
        givenName: 'My',
        middleName: 'Nylas',
        surname: 'Friend',
        notes: 'Make sure to keep in touch!',
        emails: [{ type: 'work', email: `friend-${run}@example.com` }],
        phoneNumbers: [{ type: 'work', number: '(555) 555-5555' }],
        webPages: [{ type: 'other', url: 'https://example.com' }],
        groups: [{ id: contactGroupId, object: 'contact_group' }],
      },
    });
    expect(created.data).toMatchObject({
      object: 'contact',
      grantId: a.id,
      givenName: 'My',
      surname: 'Friend',
      source: 'address_book',
      groups: [{ id: contactGroupId }],
    });
    expect(created.data.emails).toEqual([{ type: 'work', email: `friend-${run}@example.com` }]);
    contact = created.data;
  });

  step('contacts.list (filters email, group; nextCursor paging)', async () => {
    const a = need(grantA, 'grant A');
    const c = need(contact, 'a created contact');
    const byEmail = await nylas.contacts.list({
      identifier: a.id,
      queryParams: { email: `friend-${run}@example.com` },
    });
    expect(byEmail.data.map((x) => x.id)).toEqual([c.id]);
    const byGroup = await nylas.contacts.list({
      identifier: a.id,
      queryParams: { group: need(contactGroupId, 'a group'), recurse: true },
    });
    expect(byGroup.data.map((x) => x.id)).toEqual([c.id]);
    await nylas.contacts.create({ identifier: a.id, requestBody: { givenName: 'Second' } });
    const first = await nylas.contacts.list({ identifier: a.id, queryParams: { limit: 1 } });
    expect(first.data).toHaveLength(1);
    expect(first.nextCursor).toEqual(expect.any(String));
    const next = await nylas.contacts.list({
      identifier: a.id,
      queryParams: { limit: 1, pageToken: first.nextCursor },
    });
    expect(next.data.map((x) => x.id)).not.toEqual(first.data.map((x) => x.id));
  });

  step('contacts.find', async () => {
    const a = need(grantA, 'grant A');
    const c = need(contact, 'a created contact');
    const found = await nylas.contacts.find({ identifier: a.id, contactId: c.id, queryParams: {} });
    expect(found.data).toMatchObject({ id: c.id, givenName: 'My', notes: 'Make sure to keep in touch!' });
  });

  step('contacts.update', async () => {
    const a = need(grantA, 'grant A');
    const c = need(contact, 'a created contact');
    const updated = await nylas.contacts.update({
      identifier: a.id,
      contactId: c.id,
      requestBody: { companyName: 'Nylas', jobTitle: 'Friend' },
    });
    expect(updated.data).toMatchObject({ id: c.id, givenName: 'My', companyName: 'Nylas', jobTitle: 'Friend' });
  });

  step('contacts.groups', async () => {
    const a = need(grantA, 'grant A');
    const groups = await nylas.contacts.groups({ identifier: a.id });
    expect(groups.data).toContainEqual(
      expect.objectContaining({
        id: need(contactGroupId, 'a group'),
        name: `Friends ${run}`,
        path: `Friends ${run}`,
        groupType: 'user',
      }),
    );
  });

  step('contacts.destroy', async () => {
    const a = need(grantA, 'grant A');
    const c = need(contact, 'a created contact');
    const destroyed = await nylas.contacts.destroy({ identifier: a.id, contactId: c.id });
    expect(typeof destroyed.requestId).toBe('string');
    await expect(nylas.contacts.find({ identifier: a.id, contactId: c.id, queryParams: {} })).rejects.toMatchObject({
      statusCode: 404,
    });
  });

  step('contacts.list source inbox: the people grant A wrote to', async () => {
    const a = need(grantA, 'grant A');
    const b = need(grantB, 'grant B');
    await vi.waitFor(
      async () => {
        const inbox = await nylas.contacts.list({ identifier: a.id, queryParams: { source: 'inbox' } });
        expect(inbox.data.map((x) => x.emails?.[0]?.email)).toContain(b.email!.toLowerCase());
      },
      { timeout: 20_000, interval: 250 },
    );
  });

  // -------------------------------------------------------------------------------------- attachments
  step('messages.send with an attachment', async () => {
    const a = need(grantA, 'grant A');
    const sent = await nylas.messages.send({
      identifier: a.id,
      requestBody: {
        to: [{ email: emailB }],
        subject: subjectWithAttachment,
        body: '<p>See attached.</p>',
        attachments: [
          { filename: 'hello.txt', contentType: 'text/plain', content: attachmentBytes, size: attachmentBytes.length },
        ],
      },
    });
    expect(sent.data).toMatchObject({ grantId: a.id, subject: subjectWithAttachment });
    expect(sent.data.attachments).toHaveLength(1);
    expect(sent.data.attachments![0]).toMatchObject({
      filename: 'hello.txt',
      contentType: expect.stringContaining('text/plain'),
      size: attachmentBytes.length,
    });
    expect(sent.data.attachments![0]!.id).toEqual(expect.any(String));
    sentWithAttachment = sent.data;

    const b = need(grantB, 'grant B');
    const received = await eventually(async () => {
      const page = await nylas.messages.list({
        identifier: b.id,
        queryParams: { subject: subjectWithAttachment, hasAttachment: true },
      });
      expect(page.data).toHaveLength(1);
      return page.data[0]!;
    });
    expect(received.attachments).toHaveLength(1);
    expect(received.attachments![0]).toMatchObject({ filename: 'hello.txt', size: attachmentBytes.length });
    receivedAttachment = { messageId: received.id, attachmentId: received.attachments![0]!.id };
  });

  step('attachments.find', async () => {
    const b = need(grantB, 'grant B');
    const { messageId, attachmentId } = need(receivedAttachment, 'a received attachment');
    const found = await nylas.attachments.find({ identifier: b.id, attachmentId, queryParams: { messageId } });
    expect(found.data).toMatchObject({
      id: attachmentId,
      grantId: b.id,
      filename: 'hello.txt',
      size: attachmentBytes.length,
    });
    expect(found.data.contentType).toContain('text/plain');

    // The sender's copy too.
    const a = need(grantA, 'grant A');
    const sent = need(sentWithAttachment, 'the sent message with an attachment');
    const own = await nylas.attachments.find({
      identifier: a.id,
      attachmentId: sent.attachments![0]!.id,
      queryParams: { messageId: sent.id },
    });
    expect(own.data).toMatchObject({ id: sent.attachments![0]!.id, filename: 'hello.txt' });
  });

  step('attachments.downloadBytes', async () => {
    const b = need(grantB, 'grant B');
    const { messageId, attachmentId } = need(receivedAttachment, 'a received attachment');
    const bytes = await nylas.attachments.downloadBytes({ identifier: b.id, attachmentId, queryParams: { messageId } });
    expect(Buffer.isBuffer(bytes)).toBe(true);
    expect(bytes.equals(attachmentBytes)).toBe(true);
  });

  step('attachments.download (stream)', async () => {
    const b = need(grantB, 'grant B');
    const { messageId, attachmentId } = need(receivedAttachment, 'a received attachment');
    const stream = await nylas.attachments.download({ identifier: b.id, attachmentId, queryParams: { messageId } });
    expect((await readAll(stream)).equals(attachmentBytes)).toBe(true);
  });

  /** A file uploaded for a grant as the SDK's users do: an upload session, the PUT, its completion. */
  async function uploadThroughSdk(grantId: string, file: Buffer) {
    const session = await nylas.attachments.createUploadSession({
      identifier: grantId,
      requestBody: { filename: 'large.bin', contentType: 'application/octet-stream', size: file.length },
    });
    expect(session.data).toMatchObject({ method: 'PUT', size: file.length, maxSize: 25 * 1024 * 1024 });
    // The SDK camel-cases the keys of `headers` too: the PUT sends the declared type as Content-Type.
    const put = await fetch(session.data.url, {
      method: 'PUT',
      headers: { 'Content-Type': session.data.contentType },
      body: file,
    });
    expect(put.status).toBe(200);
    const done = await nylas.attachments.completeUploadSession({
      identifier: grantId,
      attachmentId: session.data.attachmentId,
    });
    expect(done.data).toMatchObject({ attachmentId: session.data.attachmentId, status: 'ready' });
    return session;
  }

  // The SDK sends attachments of 3 MB and more as multipart itself; past API Gateway's 6 MB a client
  // uploads the file first (attachment-uploads) and names it by ID in the send.
  step('attachments.createUploadSession, PUT, completeUploadSession, then messages.send naming it', async () => {
    const a = need(grantA, 'grant A');
    const b = need(grantB, 'grant B');
    const large = randomBytes(8 * 1024 * 1024);
    const session = await uploadThroughSdk(a.id, large);
    const subject = `Large upload ${run}`;
    const sent = await nylas.messages.send({
      identifier: a.id,
      requestBody: {
        to: [{ email: emailB }],
        subject,
        // The contract's reference to an upload: its ID alone (the SDK's type wants inline contents).
        attachments: [{ id: session.data.attachmentId } as never],
      },
    });
    expect(sent.data.attachments!.map((x) => [x.filename, x.size])).toEqual([['large.bin', large.length]]);
    const received = await eventually(async () => {
      const page = await nylas.messages.list({ identifier: b.id, queryParams: { subject, hasAttachment: true } });
      expect(page.data).toHaveLength(1);
      return page.data[0]!;
    });
    const bytes = await nylas.attachments.downloadBytes({
      identifier: b.id,
      attachmentId: received.attachments![0]!.id,
      queryParams: { messageId: received.id },
    });
    expect(bytes.equals(large)).toBe(true);
  });

  step('messages.cleanMessages', async () => {
    const b = need(grantB, 'grant B');
    const { messageId } = need(receivedAttachment, 'a received message');
    const cleaned = await nylas.messages.cleanMessages({
      identifier: b.id,
      requestBody: { messageId: [messageId], ignoreLinks: true, htmlAsMarkdown: true },
    });
    expect(Array.isArray(cleaned.data)).toBe(true);
    expect(cleaned.data).toHaveLength(1);
    expect(cleaned.data[0]).toMatchObject({ id: messageId, subject: subjectWithAttachment });
    expect(cleaned.data[0]!.conversation).toContain('See attached.');
  });

  step('messages.destroy', async () => {
    const b = need(grantB, 'grant B');
    const message = need(receivedByB, "B's copy of the message");
    const destroyed = await nylas.messages.destroy({ identifier: b.id, messageId: message.id });
    expect(typeof destroyed.requestId).toBe('string');
    // An Agent Account's DELETE (without hard_delete) moves the message to the trash.
    const found = await nylas.messages.find({ identifier: b.id, messageId: message.id });
    expect(found.data.folders).toEqual([await trashFolderId(b.id)]);
  });

  // ----------------------------------------------------------------------------------------- webhooks
  step('webhooks.create (the endpoint answers the challenge)', async () => {
    const hooks = need(receiver, 'the webhook receiver');
    const created = await nylas.webhooks.create({
      requestBody: {
        webhookUrl: hooks.url,
        triggerTypes: [WebhookTriggers.MessageCreated, WebhookTriggers.GrantCreated],
        description: 'SDK e2e',
        notificationEmailAddresses: [`ops-${run}@example.com`],
      },
    });
    expect(hooks.challenges.length).toBeGreaterThan(0);
    expect(created.data.id).toEqual(expect.any(String));
    expect(created.data).toMatchObject({
      webhookUrl: hooks.url,
      status: 'active',
      description: 'SDK e2e',
      notificationEmailAddresses: [`ops-${run}@example.com`],
    });
    expect([...created.data.triggerTypes].sort()).toEqual(['grant.created', 'message.created']);
    expect(created.data.webhookSecret).toEqual(expect.any(String));
    expect(created.data.webhookSecret.length).toBeGreaterThan(0);
    expect(created.data.createdAt).toEqual(expect.any(Number));
    webhook = created.data;
  });

  step('webhooks.list', async () => {
    const w = need(webhook, 'a webhook');
    const list = await nylas.webhooks.list();
    expect(Array.isArray(list.data)).toBe(true);
    const mine = list.data.find((x) => x.id === w.id);
    expect(mine).toMatchObject({ id: w.id, webhookUrl: w.webhookUrl, status: 'active' });
    expect(list.nextCursor).toBeUndefined();
  });

  step('webhooks.find', async () => {
    const w = need(webhook, 'a webhook');
    const found = await nylas.webhooks.find({ webhookId: w.id });
    expect(found.data).toMatchObject({ id: w.id, webhookUrl: w.webhookUrl, status: 'active', description: 'SDK e2e' });
    expect([...found.data.triggerTypes].sort()).toEqual(['grant.created', 'message.created']);
  });

  step('webhooks.update', async () => {
    const w = need(webhook, 'a webhook');
    const updated = await nylas.webhooks.update({
      webhookId: w.id,
      requestBody: {
        description: 'SDK e2e (updated)',
        triggerTypes: [WebhookTriggers.MessageCreated, WebhookTriggers.MessageUpdated],
      },
    });
    expect(updated.data).toMatchObject({ id: w.id, description: 'SDK e2e (updated)' });
    expect([...updated.data.triggerTypes].sort()).toEqual(['message.created', 'message.updated']);
  });

  step('webhooks.rotateSecret', async () => {
    const w = need(webhook, 'a webhook');
    const rotated = await nylas.webhooks.rotateSecret({ webhookId: w.id });
    expect(rotated.data.id).toBe(w.id);
    expect(rotated.data.webhookSecret).toEqual(expect.any(String));
    expect(rotated.data.webhookSecret).not.toBe(w.webhookSecret);
  });

  step('webhooks.ipAddresses', async () => {
    const ips = await nylas.webhooks.ipAddresses();
    expect(Array.isArray(ips.data.ipAddresses)).toBe(true);
    expect(ips.data.updatedAt).toEqual(expect.any(Number));
  });

  step('webhooks.destroy', async () => {
    const w = need(webhook, 'a webhook');
    const destroyed = await nylas.webhooks.destroy({ webhookId: w.id });
    expect(typeof destroyed.requestId).toBe('string');
    // The contract's 200 answer of DELETE /v3/webhooks/{id} is {request_id, data: {status}} (WebhookDeleteResponse).
    expect(destroyed.data?.status).toBe('success');
    const list = await nylas.webhooks.list();
    expect(list.data.map((x) => x.id)).not.toContain(w.id);
  });

  // ---------------------------------------------------------------------------------------- scheduler
  // The scheduler with the API key as the SDK sends it: configurations and sessions, and the public
  // availability and bookings endpoints (the key opens the application's own configurations,
  // private ones included).
  const organizerOf = (email: string): ConfigParticipant => ({
    email,
    name: 'Sales Agent',
    isOrganizer: true,
    availability: {
      calendarIds: ['primary'],
      openHours: [{ days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', start: '9:00', end: '17:00', exdates: [] }],
    },
    booking: { calendarId: 'primary' },
  });

  step('scheduler.configurations.create (a public one with a slug, a private organizer-confirmation one)', async () => {
    schedulerFrom = exchanges.length;
    const a = need(grantA, 'grant A');
    const created = await nylas.scheduler.configurations.create({
      identifier: a.id,
      requestBody: {
        slug: `sdk-${run}`,
        participants: [organizerOf(emailA)],
        availability: { durationMinutes: 30, intervalMinutes: 30 },
        eventBooking: { title: `Intro ${run}` },
        scheduler: { minBookingNotice: 0, availableDaysInFuture: 30 },
      },
    });
    expect(created.data).toMatchObject({
      slug: `sdk-${run}`,
      requiresSessionAuth: false,
      eventBooking: { title: `Intro ${run}` },
      availability: { durationMinutes: 30 },
    });
    expect((created.data as StoredConfiguration).id).toEqual(expect.any(String));
    publicConfig = created.data as StoredConfiguration;

    const review = await nylas.scheduler.configurations.create({
      identifier: a.id,
      requestBody: {
        requiresSessionAuth: true,
        participants: [organizerOf(emailA)],
        availability: { durationMinutes: 30, intervalMinutes: 30 },
        eventBooking: { title: `Review ${run}`, bookingType: 'organizer-confirmation' },
        scheduler: { minBookingNotice: 0, organizerConfirmationUrl: 'https://app.example.com/confirm' },
      },
    });
    expect(review.data).toMatchObject({
      requiresSessionAuth: true,
      eventBooking: { bookingType: 'organizer-confirmation' },
      scheduler: { organizerConfirmationUrl: 'https://app.example.com/confirm' },
    });
    privateConfig = review.data as StoredConfiguration;
  });

  step('scheduler.configurations.list, find and update', async () => {
    const a = need(grantA, 'grant A');
    const open = need(publicConfig, 'the public configuration');
    const list = await nylas.scheduler.configurations.list({ identifier: a.id });
    expect((list.data as StoredConfiguration[]).map((c) => c.id).sort()).toEqual(
      [open.id, need(privateConfig, 'the private configuration').id].sort(),
    );
    expect(list.nextCursor).toBeUndefined();
    const found = await nylas.scheduler.configurations.find({ identifier: a.id, configurationId: open.id });
    expect(found.data).toMatchObject({ id: open.id, slug: `sdk-${run}` });
    const updated = await nylas.scheduler.configurations.update({
      identifier: a.id,
      configurationId: open.id,
      requestBody: { eventBooking: { title: `Intro call ${run}` } },
    });
    expect(updated.data).toMatchObject({
      id: open.id,
      eventBooking: { title: `Intro call ${run}` },
      slug: `sdk-${run}`,
    });
  });

  step('scheduler.sessions.create and destroy', async () => {
    const review = need(privateConfig, 'the private configuration');
    const session = await nylas.scheduler.sessions.create({
      requestBody: { configurationId: review.id, timeToLive: 5 },
    });
    expect(session.data.sessionId).toEqual(expect.any(String));
    const bySlug = await nylas.scheduler.sessions.create({ requestBody: { slug: `sdk-${run}` } });
    expect(bySlug.data.sessionId).toEqual(expect.any(String));
    const destroyed = await nylas.scheduler.sessions.destroy({ sessionId: session.data.sessionId });
    expect(typeof destroyed.requestId).toBe('string');
    await nylas.scheduler.sessions.destroy({ sessionId: bySlug.data.sessionId });
  });

  step(
    'scheduler.availability.get with the API key (a private configuration by ID, a public one by slug)',
    async () => {
      const review = need(privateConfig, 'the private configuration');
      const day = midnight(3);
      const slots = await nylas.scheduler.availability.get({
        queryParams: { startTime: day, endTime: day + DAY, configurationId: review.id },
      });
      expect(slots.data.timeSlots).toHaveLength(16);
      expect(slots.data.timeSlots[0]).toMatchObject({
        startTime: day + 9 * 3600,
        endTime: day + 9 * 3600 + 1800,
        emails: [emailA],
      });
      const bySlug = await nylas.scheduler.availability.get({
        queryParams: { startTime: day, endTime: day + DAY, slug: `sdk-${run}` },
      });
      expect(bySlug.data.timeSlots).toHaveLength(16);
    },
  );

  step('scheduler.bookings.create (pending, private configuration) and find', async () => {
    const review = need(privateConfig, 'the private configuration');
    const start = midnight(3) + 10 * 3600;
    const created = await nylas.scheduler.bookings.create({
      queryParams: { configurationId: review.id },
      requestBody: { startTime: start, endTime: start + 1800, guest: schedulerGuest, emailLanguage: 'en' },
    });
    expect(created.data).toMatchObject({ status: 'pending', title: `Review ${run}`, organizer: { email: emailA } });
    expect(created.data.bookingId).toEqual(expect.any(String));
    pendingBooking = created.data;
    const found = await nylas.scheduler.bookings.find({
      bookingId: created.data.bookingId,
      queryParams: { configurationId: review.id },
    });
    expect(found.data).toMatchObject({ bookingId: created.data.bookingId, status: 'pending' });
  });

  step('scheduler.bookings.confirm with the salt of the organizer’s confirmation link', async () => {
    const a = need(grantA, 'grant A');
    const review = need(privateConfig, 'the private configuration');
    const booking = need(pendingBooking, 'the pending booking');
    // The organizer is asked by mail, with its own link: its booking reference carries the salt.
    const request = await eventually(async () => {
      const page = await nylas.messages.list({
        identifier: a.id,
        queryParams: { subject: `Confirm booking: Review ${run} with ${schedulerGuest.name}` },
      });
      expect(page.data).toHaveLength(1);
      return page.data[0]!;
    });
    const body = (await nylas.messages.find({ identifier: a.id, messageId: request.id })).data.body ?? '';
    const reference = /https:\/\/app\.example\.com\/confirm\?booking_reference=([A-Za-z0-9_-]+)/.exec(body)?.[1];
    const salt = Buffer.from(need(reference, 'the confirmation link in the mail'), 'base64url')
      .toString('utf8')
      .split(':')[2]!;
    const confirmed = await nylas.scheduler.bookings.confirm({
      bookingId: booking.bookingId,
      queryParams: { configurationId: review.id },
      requestBody: { salt, status: 'confirmed' },
    });
    expect(confirmed.data).toMatchObject({ bookingId: booking.bookingId, status: 'booked' });
  });

  step('scheduler.bookings.reschedule', async () => {
    const review = need(privateConfig, 'the private configuration');
    const booking = need(pendingBooking, 'the booking');
    const start = midnight(3) + 11 * 3600;
    const moved = await nylas.scheduler.bookings.reschedule({
      bookingId: booking.bookingId,
      queryParams: { configurationId: review.id },
      requestBody: { startTime: start, endTime: start + 1800 },
    });
    expect(moved.data).toMatchObject({ bookingId: booking.bookingId, status: 'booked' });
    expect((moved.data as Booking & { startTime: number }).startTime).toBe(start);
    const day = midnight(3);
    const free = (
      await nylas.scheduler.availability.get({
        queryParams: { startTime: day, endTime: day + DAY, configurationId: review.id },
      })
    ).data.timeSlots.map((t) => t.startTime);
    expect(free).toContain(day + 10 * 3600);
    expect(free).not.toContain(start);
  });

  step('scheduler.bookings.destroy', async () => {
    const review = need(privateConfig, 'the private configuration');
    const booking = need(pendingBooking, 'the booking');
    const destroyed = await nylas.scheduler.bookings.destroy({
      bookingId: booking.bookingId,
      queryParams: { configurationId: review.id },
      requestBody: { cancellationReason: 'Plans changed' },
    });
    expect(typeof destroyed.requestId).toBe('string');
    const found = await nylas.scheduler.bookings.find({
      bookingId: booking.bookingId,
      queryParams: { configurationId: review.id },
    });
    expect(found.data).toMatchObject({ status: 'cancelled' });
  });

  step('scheduler.bookings.create on a public configuration by slug with the API key', async () => {
    const start = midnight(4) + 9 * 3600;
    const created = await nylas.scheduler.bookings.create({
      queryParams: { slug: `sdk-${run}` },
      requestBody: { startTime: start, endTime: start + 1800, guest: schedulerGuest },
    });
    expect(created.data).toMatchObject({ status: 'booked', title: `Intro call ${run}` });
    await nylas.scheduler.bookings.destroy({ bookingId: created.data.bookingId, queryParams: { slug: `sdk-${run}` } });
  });

  step('scheduler.configurations.destroy', async () => {
    const a = need(grantA, 'grant A');
    for (const config of [
      need(publicConfig, 'the public configuration'),
      need(privateConfig, 'the private configuration'),
    ]) {
      const destroyed = await nylas.scheduler.configurations.destroy({ identifier: a.id, configurationId: config.id });
      expect(typeof destroyed.requestId).toBe('string');
    }
    expect((await nylas.scheduler.configurations.list({ identifier: a.id })).data).toEqual([]);
  });

  step('no scheduler request was answered 4xx or 5xx', async () => {
    const from = need(schedulerFrom, 'the scheduler steps');
    const failed = exchanges
      .slice(from)
      .filter((e) => /\/scheduling\//.test(e.url) && (e.status === undefined || e.status >= 400));
    expect(failed.map((e) => `${e.method} ${e.url} → ${e.status ?? e.error}`)).toEqual([]);
  });

  // ------------------------------------------------------------------------- domains, transactional send
  // The SDK's domains calls insist on the contract's service-account signature headers and then send no
  // Authorization; Switchboard authenticates the API key and reads none of them (README, differences).
  const adminHeaders = () => ({
    headers: {
      authorization: `Bearer ${need(apiKey, 'the API key')}`,
      'x-nylas-kid': 'unused',
      'x-nylas-nonce': run,
      'x-nylas-timestamp': String(Math.floor(Date.now() / 1000)),
      'x-nylas-signature': 'unused',
    },
  });
  const senderDomain = `mail-${run}.example.org`;
  let domain: Domain | undefined;

  step('domains.create, find and list', async () => {
    const created = await nylas.domains.create({
      requestBody: { name: 'Receipts', domainAddress: senderDomain },
      overrides: adminHeaders(),
    });
    expect(created.data).toMatchObject({ name: 'Receipts', domainAddress: senderDomain, verifiedOwnership: false });
    domain = created.data;
    const found = await nylas.domains.find({ domainId: created.data.id!, overrides: adminHeaders() });
    expect(found.data).toEqual(created.data);
    const listed = await nylas.domains.list({ overrides: adminHeaders() });
    expect(listed.data.map((d) => d.id)).toContain(created.data.id);
  });

  step('domains.info and verify: failed before the record is published, done after', async () => {
    const d = need(domain, 'the domain');
    const info = await nylas.domains.info({
      domainId: d.id!,
      requestBody: { type: 'ownership' },
      overrides: adminHeaders(),
    });
    expect(info.data).toMatchObject({ domainId: d.id, status: 'pending', attempt: { type: 'ownership' } });
    const { host, type, value } = info.data.attempt!.options as { host: string; type: string; value: string };
    expect([host, type]).toEqual(['@', 'TXT']);
    const before = await nylas.domains.verify({
      domainId: d.id!,
      requestBody: { type: 'ownership' },
      overrides: adminHeaders(),
    });
    expect(before.data.status).toBe('failed');
    need(dns, 'the DNS server').set(senderDomain, [{ type: 'TXT', value }]);
    const after = await nylas.domains.verify({
      domainId: d.id!,
      requestBody: { type: 'ownership' },
      overrides: adminHeaders(),
    });
    expect(after.data.status).toBe('done');
  });

  step('transactionalSend.send from the verified domain (no grant), relayed outside', async () => {
    need(domain, 'the domain');
    const sent = await nylas.transactionalSend.send({
      domainName: senderDomain,
      requestBody: {
        from: [{ email: `receipts@${senderDomain}`, name: 'Receipts' }],
        to: [{ email: external }],
        subject: `Receipt ${run}`,
        body: '<p>Thank you</p>',
      },
    });
    // The SDK types the answer as { messageId }; the contract's is the message, which has both.
    expect(sent.data.messageId).toEqual(expect.any(String));
    expect(sent.data).toMatchObject({ subject: `Receipt ${run}`, from: [{ email: `receipts@${senderDomain}` }] });
  });

  step('domains.update and destroy', async () => {
    const d = need(domain, 'the domain');
    const updated = await nylas.domains.update({
      domainId: d.id!,
      requestBody: { name: 'Invoices' },
      overrides: adminHeaders(),
    });
    expect(updated.data).toMatchObject({ id: d.id, name: 'Invoices', verifiedOwnership: true });
    await nylas.domains.destroy({ domainId: d.id!, overrides: adminHeaders() });
    await expect(nylas.domains.find({ domainId: d.id!, overrides: adminHeaders() })).rejects.toBeInstanceOf(
      NylasApiError,
    );
  });

  // ------------------------------------------------------------------------------ connected accounts
  // ------------------------------------------------------------------------- group events, application templates
  // The SDK (8.4.0) has no resource for either: their requests go through its own fetch, as an application
  // using this SDK would send them, and the SDK's calls that use them (bookings, send) run unchanged.
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${apiBase}${path}`, {
      method,
      headers: { authorization: `Bearer ${need(apiKey, 'the API key')}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as { data?: Record<string, unknown> } };
  };

  step(
    'group events: a group configuration, a slot of one seat booked through scheduler.bookings.create, then full',
    async () => {
      const a = need(grantA, 'grant A');
      const config = await nylas.scheduler.configurations.create({
        identifier: a.id,
        requestBody: {
          type: 'group',
          participants: [organizerOf(emailA)],
          availability: { durationMinutes: 60 },
          eventBooking: { title: `Class ${run}` },
          scheduler: { minBookingNotice: 0 },
        } as never,
      });
      const configId = (config.data as StoredConfiguration).id;
      const start = midnight(5) + 10 * 3600;
      const group = await api('POST', `/v3/grants/${a.id}/scheduling/configurations/${configId}/group-events`, {
        calendar_id: 'primary',
        title: `Class ${run}`,
        capacity: 1,
        when: { start_time: start, end_time: start + 3600 },
      });
      expect(group.status).toBe(200);
      const groupEventId = group.body.data!.id as string;
      const seat = await nylas.scheduler.bookings.create({
        queryParams: { configurationId: configId },
        requestBody: { startTime: start, endTime: start + 3600, guest: schedulerGuest },
      });
      expect(seat.data).toMatchObject({ status: 'booked', eventId: groupEventId });
      await expect(
        nylas.scheduler.bookings.create({
          queryParams: { configurationId: configId },
          requestBody: {
            startTime: start,
            endTime: start + 3600,
            guest: { name: 'Late', email: `late-${run}@example.net` },
          },
        }),
      ).rejects.toMatchObject({ statusCode: 409 });
      const removed = await api(
        'DELETE',
        `/v3/grants/${a.id}/scheduling/configurations/${configId}/group-events/${groupEventId}`,
      );
      expect(removed.status).toBe(200);
      await nylas.scheduler.configurations.destroy({ identifier: a.id, configurationId: configId });
    },
  );

  step('application templates: one made for the application, used by messages.send of grant A', async () => {
    const a = need(grantA, 'grant A');
    const template = await api('POST', '/v3/templates', {
      name: `Welcome ${run}`,
      subject: 'Welcome, {{name}}',
      body: '<p>Hello {{name}}</p>',
      engine: 'mustache',
    });
    expect(template.status).toBe(200);
    const templateId = template.body.data!.id as string;
    expect(templateId).toMatch(/^atpl_/);
    const sent = await nylas.messages.send({
      identifier: a.id,
      requestBody: {
        to: [{ email: external }],
        template: { id: templateId, variables: { name: 'Ada' } },
      } as never,
    });
    expect(sent.data).toMatchObject({ subject: 'Welcome, Ada' });
    expect(sent.data.body).toContain('Hello Ada');
    expect((await api('DELETE', `/v3/templates/${templateId}`)).status).toBe(200);
  });

  step('applications.getDetails', async () => {
    connectedFrom = exchanges.length;
    const details = await nylas.applications.getDetails();
    expect(typeof details.requestId).toBe('string');
    expect(details.data.applicationId).toBe(/Application\s+(\S+)/.exec(need(started, 'npm start').output())?.[1]);
    expect(details.data.branding.name).toEqual(expect.any(String));
    expect(Array.isArray(details.data.callbackUris)).toBe(true);
    applicationId = details.data.applicationId;
  });

  step('applications.redirectUris.create (the hosted OAuth steps\u2019 URI, and a js one)', async () => {
    const created = await nylas.applications.redirectUris.create({
      requestBody: { url: redirectUri, platform: 'web' },
    });
    expect(created.data).toMatchObject({ url: redirectUri, platform: 'web' });
    expect(created.data.id).toEqual(expect.any(String));
    oauthRedirect = created.data;
    const js = await nylas.applications.redirectUris.create({
      requestBody: {
        url: `https://app.example.com/sdk-${run}/callback`,
        platform: 'js',
        settings: { origin: 'https://app.example.com' },
      },
    });
    expect(js.data).toMatchObject({
      url: `https://app.example.com/sdk-${run}/callback`,
      platform: 'js',
      settings: { origin: 'https://app.example.com' },
    });
    expect(js.data.id).not.toBe(created.data.id);
    otherRedirect = js.data;
    // The application's details list what is registered.
    const details = await nylas.applications.getDetails();
    expect(details.data.callbackUris?.map((u) => u.id)).toEqual(expect.arrayContaining([created.data.id, js.data.id]));
  });

  step('applications.redirectUris.list, find and update', async () => {
    const web = need(oauthRedirect, 'the web redirect URI');
    const js = need(otherRedirect, 'the js redirect URI');
    const list = await nylas.applications.redirectUris.list();
    expect(list.data.map((u) => u.id)).toEqual(expect.arrayContaining([web.id, js.id]));
    expect(list.data.find((u) => u.id === web.id)).toMatchObject({ url: redirectUri, platform: 'web' });
    const found = await nylas.applications.redirectUris.find({ redirectUriId: js.id });
    expect(found.data).toMatchObject({
      id: js.id,
      url: js.url,
      platform: 'js',
      settings: { origin: 'https://app.example.com' },
    });
    const updated = await nylas.applications.redirectUris.update({
      redirectUriId: js.id,
      requestBody: {
        url: `https://www.example.com/sdk-${run}/callback`,
        settings: { origin: 'https://www.example.com' },
      },
    });
    expect(updated.data).toMatchObject({
      id: js.id,
      url: `https://www.example.com/sdk-${run}/callback`,
      platform: 'js',
      settings: { origin: 'https://www.example.com' },
    });
    expect((await nylas.applications.redirectUris.find({ redirectUriId: js.id })).data.url).toBe(
      `https://www.example.com/sdk-${run}/callback`,
    );
  });

  step('applications.redirectUris.destroy', async () => {
    const js = need(otherRedirect, 'the js redirect URI');
    const destroyed = await nylas.applications.redirectUris.destroy({ redirectUriId: js.id });
    expect(typeof destroyed.requestId).toBe('string');
    const ids = (await nylas.applications.redirectUris.list()).data.map((u) => u.id);
    expect(ids).not.toContain(js.id);
    expect(ids).toContain(need(oauthRedirect, 'the web redirect URI').id);
  });

  step('connectors.list and find: the google and microsoft connectors npm start registers', async () => {
    // "OpenID Connect  http://127.0.0.1:<port>/google (google), http://127.0.0.1:<port>/microsoft (microsoft): …"
    const banner = /OpenID Connect\s+(\S+) \(google\), (\S+) \(microsoft\)/.exec(need(started, 'npm start').output());
    const issuers = {
      google: need(banner?.[1], 'the google issuer in the banner'),
      microsoft: need(banner?.[2], 'the microsoft issuer in the banner'),
    };
    const list = await nylas.connectors.list({});
    const byProvider = new Map<string, Connector>(list.data.map((c) => [c.provider, c]));
    // "Google APIs     http://127.0.0.1:<port>   (provider A's …": the google connector's api_base_url.
    const googleApis = need(
      /Google APIs\s+(\S+)/.exec(need(started, 'npm start').output())?.[1],
      'the Google APIs in the banner',
    );
    // "Microsoft Graph http://127.0.0.1:<port>   (provider B's …": the microsoft connector's api_base_url.
    const microsoftGraph = need(
      /Microsoft Graph\s+(\S+)/.exec(need(started, 'npm start').output())?.[1],
      'the Microsoft Graph in the banner',
    );
    for (const provider of ['google', 'microsoft'] as const) {
      expect(byProvider.get(provider)?.settings).toEqual({
        clientId: 'switchboard-local',
        issuer: issuers[provider],
        apiBaseUrl: provider === 'google' ? googleApis : microsoftGraph,
      });
      const found = await nylas.connectors.find({ provider });
      expect(found.data).toMatchObject({ provider, settings: { clientId: 'switchboard-local' } });
      // The client secret is write-only.
      expect(found.data.settings).not.toHaveProperty('clientSecret');
    }
  });

  step('connectors.create, update (the SDK sends PUT) and credentials of type connector', async () => {
    const created = await nylas.connectors.create({
      requestBody: {
        name: `Yahoo ${run}`,
        provider: YAHOO,
        settings: { clientId: `yahoo-client-${run}`, clientSecret: 'yahoo-secret' },
        scope: ['mail-r'],
      },
    });
    expect(created.data).toMatchObject({
      provider: 'yahoo',
      settings: { clientId: `yahoo-client-${run}` },
      scope: ['mail-r'],
    });
    expect(JSON.stringify(created.data)).not.toContain('yahoo-secret');

    const credential = await nylas.connectors.credentials.create({
      provider: YAHOO,
      requestBody: {
        name: `Yahoo app ${run}`,
        credentialType: CredentialType.CONNECTOR,
        credentialData: { clientId: `other-client-${run}`, clientSecret: 'other-secret' },
      },
    });
    expect(credential.data).toMatchObject({ name: `Yahoo app ${run}`, credentialType: 'connector' });
    expect(credential.data.id).toEqual(expect.any(String));
    expect(JSON.stringify(credential.data)).not.toContain('other-secret');
    connectorCredential = credential.data;

    const updated = await nylas.connectors.update({
      provider: YAHOO,
      requestBody: { name: `Yahoo mail ${run}`, scope: ['mail-r', 'mail-w'], activeCredentialId: credential.data.id },
    });
    expect(updated.data).toMatchObject({
      provider: 'yahoo',
      scope: ['mail-r', 'mail-w'],
      activeCredentialId: credential.data.id,
    });
    expect((updated.data as Connector & { name: string }).name).toBe(`Yahoo mail ${run}`);
    expect((await nylas.connectors.find({ provider: YAHOO })).data).toMatchObject({
      activeCredentialId: credential.data.id,
      settings: { clientId: `yahoo-client-${run}` },
    });
  });

  step('connectors.credentials.list, find, update and destroy', async () => {
    const active = need(connectorCredential, 'the connector credential');
    const spare = await nylas.connectors.credentials.create({
      provider: YAHOO,
      requestBody: {
        name: `Spare ${run}`,
        credentialType: CredentialType.CONNECTOR,
        credentialData: { clientId: `spare-${run}`, clientSecret: 'spare-secret' },
      },
    });
    const list = await nylas.connectors.credentials.list({ provider: YAHOO });
    expect(list.data.map((c) => c.id).sort()).toEqual([active.id, spare.data.id].sort());
    const found = await nylas.connectors.credentials.find({ provider: YAHOO, credentialsId: spare.data.id });
    expect(found.data).toMatchObject({ id: spare.data.id, name: `Spare ${run}`, credentialType: 'connector' });
    const updated = await nylas.connectors.credentials.update({
      provider: YAHOO,
      credentialsId: spare.data.id,
      requestBody: {
        name: `Spare renamed ${run}`,
        credentialData: { clientId: `spare-2-${run}`, clientSecret: 'spare-secret-2' },
      },
    });
    expect(updated.data).toMatchObject({
      id: spare.data.id,
      name: `Spare renamed ${run}`,
      credentialType: 'connector',
    });
    expect(JSON.stringify(updated.data)).not.toContain('spare-secret-2');
    const destroyed = await nylas.connectors.credentials.destroy({ provider: YAHOO, credentialsId: spare.data.id });
    expect(typeof destroyed.requestId).toBe('string');
    expect((await nylas.connectors.credentials.list({ provider: YAHOO })).data.map((c) => c.id)).toEqual([active.id]);
  });

  step('connectors.destroy (with its credentials)', async () => {
    const destroyed = await nylas.connectors.destroy({ provider: YAHOO });
    expect(typeof destroyed.requestId).toBe('string');
    const providers = (await nylas.connectors.list({})).data.map((c) => c.provider);
    expect(providers).not.toContain('yahoo');
    expect(providers).toEqual(expect.arrayContaining(['google', 'microsoft']));
  });

  step('connectors.credentials: a google service account (a real RSA key)', async () => {
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    const created = await nylas.connectors.credentials.create({
      provider: 'google',
      requestBody: {
        name: `Service account ${run}`,
        credentialType: CredentialType.SERVICEACCOUNT,
        credentialData: {
          type: 'service_account',
          projectId: `project-${run}`,
          privateKeyId: `key-${run}`,
          privateKey,
          clientEmail: `robot-${run}@project-${run}.iam.gserviceaccount.com`,
        },
      },
    });
    expect(created.data).toMatchObject({ name: `Service account ${run}`, credentialType: 'serviceaccount' });
    expect(JSON.stringify(created.data)).not.toContain('PRIVATE KEY');
    const found = await nylas.connectors.credentials.find({ provider: 'google', credentialsId: created.data.id });
    expect(found.data).toMatchObject({ id: created.data.id, credentialType: 'serviceaccount' });
    await nylas.connectors.credentials.destroy({ provider: 'google', credentialsId: created.data.id });
    expect((await nylas.connectors.credentials.list({ provider: 'google' })).data.map((c) => c.id)).not.toContain(
      created.data.id,
    );
  });

  step('auth.detectProvider', async () => {
    const gmail = await nylas.auth.detectProvider({ email: `x-${run}@gmail.com` });
    expect(gmail.data).toMatchObject({ emailAddress: `x-${run}@gmail.com`, detected: true, provider: 'google' });
    // Yahoo has no connector now: detected only when every provider type counts.
    const yahoo = await nylas.auth.detectProvider({ email: `x-${run}@yahoo.co.uk`, allProviderTypes: true });
    expect(yahoo.data).toMatchObject({ detected: true, provider: 'yahoo' });
    const unknown = await nylas.auth.detectProvider({ email: `x-${run}@example.org` });
    expect(unknown.data).toMatchObject({ emailAddress: `x-${run}@example.org`, detected: false });
  });

  step('auth.urlForOAuth2 (google, offline) → sign-in → auth.exchangeCodeForToken', async () => {
    const clientId = need(applicationId, 'the application ID');
    need(oauthRedirect, 'the registered redirect URI');
    const state = `state-${run}`;
    const url = nylas.auth.urlForOAuth2({
      clientId,
      provider: 'google',
      redirectUri,
      loginHint: googleUser,
      accessType: 'offline',
      state,
    });
    expect(url.startsWith(`${apiBase}/v3/connect/auth?`)).toBe(true);
    const code = await signIn(url, googleUser, state);
    const tokens = await nylas.auth.exchangeCodeForToken({ clientId, redirectUri, code });
    // The SDK sends its API key as client_secret.
    expect(lastTokenRequest()).toEqual({
      grant_type: 'authorization_code',
      client_id: clientId,
      client_secret: need(apiKey, 'the API key'),
      code,
      redirect_uri: redirectUri,
    });
    expect(tokens).toMatchObject({ email: googleUser, provider: 'google', tokenType: 'Bearer' });
    expect(tokens.grantId).toEqual(expect.any(String));
    expect(tokens.accessToken).toMatch(/^sbat_/);
    expect(tokens.refreshToken).toEqual(expect.any(String));
    expect(tokens.idToken).toEqual(expect.any(String));
    expect(tokens.expiresIn).toBeGreaterThan(0);
    expect(typeof tokens.scope).toBe('string');
    googleTokens = tokens;
    // The API key sees the new grant.
    const grant = await nylas.grants.find({ grantId: tokens.grantId });
    expect(grant.data).toMatchObject({
      id: tokens.grantId,
      email: googleUser,
      provider: 'google',
      grantStatus: 'valid',
    });
  });

  step('the access token as the SDK\u2019s apiKey: grants.find me and by ID', async () => {
    const tokens = need(googleTokens, 'the exchanged tokens');
    const user = asToken(tokens.accessToken);
    const me = await user.grants.find({ grantId: 'me' });
    expect(me.data).toMatchObject({ id: tokens.grantId, email: googleUser, provider: 'google' });
    const byId = await user.grants.find({ grantId: tokens.grantId });
    expect(byId.data.id).toBe(tokens.grantId);
  });

  step('auth.accessTokenInfo and auth.idTokenInfo', async () => {
    const clientId = need(applicationId, 'the application ID');
    const tokens = need(googleTokens, 'the exchanged tokens');
    const info = await nylas.auth.accessTokenInfo(tokens.accessToken);
    expect(info.data).toMatchObject({ aud: clientId, sub: tokens.grantId, email: googleUser });
    expect(info.data.exp).toBeGreaterThan(info.data.iat);
    const idInfo = await nylas.auth.idTokenInfo(need(tokens.idToken, 'an ID token'));
    expect(idInfo.data).toMatchObject({ aud: clientId, sub: tokens.grantId, email: googleUser });
  });

  step('auth.refreshAccessToken', async () => {
    const clientId = need(applicationId, 'the application ID');
    const tokens = need(googleTokens, 'the exchanged tokens');
    const refreshed = await nylas.auth.refreshAccessToken({
      clientId,
      redirectUri,
      refreshToken: need(tokens.refreshToken, 'a refresh token'),
    });
    expect(refreshed).toMatchObject({
      grantId: tokens.grantId,
      email: googleUser,
      provider: 'google',
      tokenType: 'Bearer',
    });
    expect(refreshed.accessToken).toMatch(/^sbat_/);
    expect(refreshed.accessToken).not.toBe(tokens.accessToken);
    // Refresh tokens rotate: each works once.
    expect(refreshed.refreshToken).toEqual(expect.any(String));
    expect(refreshed.refreshToken).not.toBe(tokens.refreshToken);
    expect((await asToken(refreshed.accessToken).grants.find({ grantId: 'me' })).data.id).toBe(tokens.grantId);
    refreshedTokens = refreshed;
  });

  step('auth.revoke: the access token then gets a 401, the grant stays', async () => {
    const tokens = need(refreshedTokens, 'the refreshed tokens');
    expect(await nylas.auth.revoke(tokens.accessToken)).toBe(true);
    deliberate401 = exchanges.length;
    const refused = await asToken(tokens.accessToken)
      .grants.find({ grantId: 'me' })
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(NylasApiError);
    expect((refused as NylasApiError).statusCode).toBe(401);
    expect((refused as NylasApiError).type).toBe('authentication_error');
    expect(exchanges[deliberate401]?.status).toBe(401);
    // Revoking a token is not removing the grant.
    expect((await nylas.grants.find({ grantId: tokens.grantId })).data).toMatchObject({
      id: tokens.grantId,
      grantStatus: 'valid',
    });
  });

  step('re-authenticating the same address keeps the grant ID', async () => {
    const clientId = need(applicationId, 'the application ID');
    const first = need(googleTokens, 'the first exchange');
    const state = `again-${run}`;
    const code = await signIn(
      nylas.auth.urlForOAuth2({ clientId, provider: 'google', redirectUri, loginHint: googleUser, state }),
      googleUser,
      state,
    );
    const again = await nylas.auth.exchangeCodeForToken({ clientId, redirectUri, code });
    expect(again).toMatchObject({ grantId: first.grantId, email: googleUser, provider: 'google' });
    // accessType online (the SDK's default): no refresh token.
    expect(again.refreshToken).toBeUndefined();
    expect((await asToken(again.accessToken).grants.find({ grantId: 'me' })).data.id).toBe(first.grantId);
    const grants = (await nylas.grants.list({ queryParams: { email: googleUser } })).data;
    expect(grants.map((g) => g.id)).toEqual([first.grantId]);
  });

  // Provider A's grants answer from its own APIs (Gmail, Calendar, People): npm start registers the local
  // Google fake as the google connector's api_base_url, and the fake knows every token the local sign-in issued.
  step('provider A, live: the google grant sends through Gmail, then reads, stars, lists and threads it', async () => {
    const grantId = need(googleTokens, 'the google grant').grantId;
    const subject = `Through Gmail ${run}`;
    const sent = await nylas.messages.send({
      identifier: grantId,
      requestBody: { to: [{ email: `friend-${run}@example.org` }], subject, body: '<p>Sent by Gmail</p>' },
    });
    expect(sent.data.id).toEqual(expect.any(String));
    const found = await nylas.messages.find({ identifier: grantId, messageId: sent.data.id });
    expect(found.data).toMatchObject({ id: sent.data.id, subject, grantId, folders: ['SENT'] });
    expect(found.data.from?.[0]?.email).toBe(googleUser);
    const folders = (await nylas.folders.list({ identifier: grantId })).data;
    expect(folders.find((f) => f.id === 'INBOX')?.attributes).toEqual(['\\Inbox']);
    expect(folders.find((f) => f.id === 'SENT')?.attributes).toEqual(['\\Sent']);
    const listed = await nylas.messages.list({ identifier: grantId, queryParams: { subject, in: ['SENT'] } });
    expect(listed.data.map((m) => m.id)).toEqual([sent.data.id]);
    await nylas.messages.update({ identifier: grantId, messageId: sent.data.id, requestBody: { starred: true } });
    const starred = await nylas.messages.list({ identifier: grantId, queryParams: { starred: true } });
    expect(starred.data.map((m) => m.id)).toEqual([sent.data.id]);
    const thread = await nylas.threads.find({ identifier: grantId, threadId: need(found.data.threadId, 'a thread') });
    expect(thread.data.messageIds).toEqual([sent.data.id]);
    // Gmail's own search syntax, as given.
    const native = await nylas.messages.list({
      identifier: grantId,
      queryParams: { searchQueryNative: `subject:"${subject}" is:starred` },
    });
    expect(native.data.map((m) => m.id)).toEqual([sent.data.id]);
  });

  step(
    'provider A, live: a file through an upload, sent by Gmail as a media upload, downloaded byte for byte',
    async () => {
      const grantId = need(googleTokens, 'the google grant').grantId;
      const large = randomBytes(7 * 1024 * 1024);
      const session = await uploadThroughSdk(grantId, large);
      const sent = await nylas.messages.send({
        identifier: grantId,
        requestBody: {
          to: [{ email: `friend-${run}@example.org` }],
          subject: `Large through Gmail ${run}`,
          attachments: [{ id: session.data.attachmentId } as never],
        },
      });
      const attachment = need(sent.data.attachments?.[0], 'the sent attachment');
      expect(attachment.filename).toBe('large.bin');
      const bytes = await nylas.attachments.downloadBytes({
        identifier: grantId,
        attachmentId: attachment.id,
        queryParams: { messageId: sent.data.id },
      });
      expect(bytes.equals(large)).toBe(true);
    },
  );

  step(
    'provider A, live: an event on the google grant\u2019s primary calendar, and availability across it and an Agent Account',
    async () => {
      const grantId = need(googleTokens, 'the google grant').grantId;
      const a = need(grantA, 'grant A');
      const day = Math.floor(Date.now() / 86_400_000 + 2) * 86_400; // midnight UTC, two days ahead
      const created = await nylas.events.create({
        identifier: grantId,
        queryParams: { calendarId: 'primary' },
        requestBody: {
          title: `Planning ${run}`,
          when: { startTime: day + 10 * 3600, endTime: day + 11 * 3600 },
          participants: [{ email: need(a.email, 'grant A\u2019s address'), status: 'noreply' }],
        },
      });
      // Google names the primary calendar by its account's address.
      expect(created.data).toMatchObject({ title: `Planning ${run}`, calendarId: googleUser, busy: true });
      const listed = await nylas.events.list({
        identifier: grantId,
        queryParams: { calendarId: 'primary', start: String(day), end: String(day + 86_400) },
      });
      expect(listed.data.map((e) => e.id)).toContain(created.data.id);
      // The same day through events.listImportEvents: the event as stored, for import elsewhere.
      const imported = await nylas.events.listImportEvents({
        identifier: grantId,
        queryParams: { calendarId: 'primary', start: day, end: day + 86_400 },
      });
      expect(imported.data.map((e) => e.id)).toContain(created.data.id);
      const calendars = (await nylas.calendars.list({ identifier: grantId })).data;
      expect(calendars.find((c) => c.isPrimary)).toMatchObject({ id: expect.any(String), readOnly: false });
      // Both accounts free from 09:00 to 12:00 but for the google grant's event: the slots skip 10:00–11:00.
      const availability = await nylas.calendars.getAvailability({
        requestBody: {
          startTime: day + 9 * 3600,
          endTime: day + 12 * 3600,
          durationMinutes: 60,
          intervalMinutes: 60,
          participants: [{ email: googleUser }, { email: need(a.email, 'grant A\u2019s address') }],
          availabilityRules: { availabilityMethod: AvailabilityMethod.Collective },
        },
      });
      expect(availability.data.timeSlots.map((slot) => slot.startTime)).toEqual([day + 9 * 3600, day + 11 * 3600]);
      await nylas.events.destroy({
        identifier: grantId,
        eventId: created.data.id,
        queryParams: { calendarId: 'primary' },
      });
    },
  );

  step('provider A, live: contacts.create and find in the google grant\u2019s People address book', async () => {
    const grantId = need(googleTokens, 'the google grant').grantId;
    const created = await nylas.contacts.create({
      identifier: grantId,
      requestBody: { givenName: 'Grace', surname: `Hopper ${run}`, emails: [{ email: `grace-${run}@example.org` }] },
    });
    expect(created.data.id).toMatch(/^c?\d+$/);
    const found = await nylas.contacts.find({ identifier: grantId, contactId: created.data.id, queryParams: {} });
    expect(found.data).toMatchObject({ givenName: 'Grace', surname: `Hopper ${run}` });
    const listed = await nylas.contacts.list({
      identifier: grantId,
      queryParams: { email: `grace-${run}@example.org` },
    });
    expect(listed.data.map((c) => c.id)).toEqual([created.data.id]);
  });

  step(
    'provider A, live: the scheduler with the google grant as organizer: its availability, a booking\u2019s event at Google, moved and cancelled',
    async () => {
      const grantId = need(googleTokens, 'the google grant').grantId;
      const config = await nylas.scheduler.configurations.create({
        identifier: grantId,
        requestBody: {
          participants: [organizerOf(googleUser)],
          availability: { durationMinutes: 30, intervalMinutes: 30 },
          eventBooking: { title: `Gmail intro ${run}` },
          scheduler: { minBookingNotice: 0, availableDaysInFuture: 30 },
        },
      });
      const configurationId = (config.data as StoredConfiguration).id;
      const day = midnight(5);
      const slots = async () =>
        (
          await nylas.scheduler.availability.get({
            queryParams: { startTime: day, endTime: day + DAY, configurationId },
          })
        ).data.timeSlots.map((t) => t.startTime);
      expect(await slots()).toContain(day + 9 * 3600);
      const created = await nylas.scheduler.bookings.create({
        queryParams: { configurationId },
        requestBody: { startTime: day + 9 * 3600, endTime: day + 9 * 3600 + 1800, guest: schedulerGuest },
      });
      expect(created.data).toMatchObject({ status: 'booked', organizer: { email: googleUser } });
      // The booking's event is at Google, on the organizer's primary calendar.
      const event = await eventually(async () => {
        const found = await nylas.events.find({
          identifier: grantId,
          eventId: need(created.data.eventId, 'the booking\u2019s event'),
          queryParams: { calendarId: 'primary' },
        });
        expect(found.data.when).toMatchObject({ startTime: day + 9 * 3600 });
        return found.data;
      });
      expect(event.participants.map((p) => p.email)).toContain(schedulerGuest.email);
      expect(await slots()).not.toContain(day + 9 * 3600);
      await nylas.scheduler.bookings.reschedule({
        bookingId: created.data.bookingId,
        queryParams: { configurationId },
        requestBody: { startTime: day + 10 * 3600, endTime: day + 10 * 3600 + 1800 },
      });
      await eventually(async () => {
        const moved = await nylas.events.find({
          identifier: grantId,
          eventId: event.id,
          queryParams: { calendarId: 'primary' },
        });
        expect(moved.data.when).toMatchObject({ startTime: day + 10 * 3600 });
      });
      await nylas.scheduler.bookings.destroy({ bookingId: created.data.bookingId, queryParams: { configurationId } });
      expect(
        await eventually(async () => {
          const free = await slots();
          expect(free).toContain(day + 10 * 3600);
          return free;
        }),
      ).toContain(day + 9 * 3600);
      await nylas.scheduler.configurations.destroy({ identifier: grantId, configurationId });
    },
  );

  step('auth.urlForOAuth2PKCE (microsoft) → sign-in → exchangeCodeForToken with the codeVerifier', async () => {
    const clientId = need(applicationId, 'the application ID');
    const state = `pkce-${run}`;
    const pkce = nylas.auth.urlForOAuth2PKCE({
      clientId,
      provider: 'microsoft',
      redirectUri,
      loginHint: microsoftUser,
      state,
    });
    const url = new URL(pkce.url);
    expect(url.searchParams.get('code_challenge')).toBe(pkce.secretHash);
    expect(url.searchParams.get('code_challenge_method')).toBe('s256');
    const code = await signIn(pkce.url, microsoftUser, state);
    const tokens = await nylas.auth.exchangeCodeForToken({ clientId, redirectUri, code, codeVerifier: pkce.secret });
    // The SDK fills clientSecret with its API key when none (or '') is given: it sends both the key and
    // the verifier (a UUID, shorter than RFC 7636's 43 characters), and the challenge must still match.
    expect(lastTokenRequest()).toMatchObject({
      grant_type: 'authorization_code',
      code_verifier: pkce.secret,
      client_secret: need(apiKey, 'the API key'),
    });
    expect(tokens).toMatchObject({ email: microsoftUser, provider: 'microsoft', tokenType: 'Bearer' });
    expect(tokens.grantId).not.toBe(need(googleTokens, 'the google grant').grantId);
    expect((await asToken(tokens.accessToken).grants.find({ grantId: 'me' })).data).toMatchObject({
      id: tokens.grantId,
      email: microsoftUser,
      provider: 'microsoft',
    });
    microsoftTokens = tokens;
  });

  // Provider B's grants answer from Microsoft Graph: npm start registers the local Graph fake as the
  // microsoft connector's api_base_url, and the fake adopts a token it does not know by asking the local
  // sign-in who it is (a new user: an empty mailbox, a default calendar and contacts folder).
  step(
    'provider B, live: the microsoft grant sends through Graph, finds it in Sent Items, stars, lists, threads, searches and moves it',
    async () => {
      const grantId = need(microsoftTokens, 'the microsoft grant').grantId;
      const subject = `Through Graph ${run}`;
      const sent = await nylas.messages.send({
        identifier: grantId,
        requestBody: { to: [{ email: `friend-${run}@example.org` }], subject, body: '<p>Sent by Graph</p>' },
      });
      // Graph's IDs, as long as Exchange's.
      expect(sent.data.id.length).toBeGreaterThan(100);
      // Folders are Graph's folder IDs; the well-known ones carry their roles as attributes.
      const folders = (await nylas.folders.list({ identifier: grantId })).data;
      const withRole = (attribute: string) =>
        need(
          folders.find((f) => f.attributes?.includes(attribute)),
          `a folder with ${attribute}`,
        );
      const sentItems = withRole('\\Sent');
      expect(sentItems).toMatchObject({ name: 'Sent Items', systemFolder: true, attributes: ['\\Sent'] });
      expect(withRole('\\Inbox')).toMatchObject({ name: 'Inbox', systemFolder: true });
      const found = await nylas.messages.find({ identifier: grantId, messageId: sent.data.id });
      expect(found.data).toMatchObject({ id: sent.data.id, subject, grantId, folders: [sentItems.id] });
      expect(found.data.from?.[0]?.email).toBe(microsoftUser);
      // `in` takes a folder's ID, or one of Graph's well-known names.
      for (const folder of [sentItems.id, 'sentitems']) {
        const listed = await nylas.messages.list({ identifier: grantId, queryParams: { subject, in: [folder] } });
        expect(listed.data.map((m) => m.id)).toEqual([sent.data.id]);
      }
      await nylas.messages.update({ identifier: grantId, messageId: sent.data.id, requestBody: { starred: true } });
      const starred = await nylas.messages.list({ identifier: grantId, queryParams: { starred: true } });
      expect(starred.data.map((m) => m.id)).toEqual([sent.data.id]);
      const thread = await nylas.threads.find({
        identifier: grantId,
        threadId: need(found.data.threadId, 'a thread'),
      });
      expect(thread.data.messageIds).toEqual([sent.data.id]);
      // Graph's own search syntax ($search, KQL), as given.
      const native = await nylas.messages.list({
        identifier: grantId,
        queryParams: { searchQueryNative: `subject:${run} AND from:${microsoftUser}` },
      });
      expect(native.data.map((m) => m.id)).toEqual([sent.data.id]);
      // A moved message keeps its ID (immutable IDs).
      const archive = withRole('\\Archive');
      const moved = await nylas.messages.update({
        identifier: grantId,
        messageId: sent.data.id,
        requestBody: { folders: [archive.id] },
      });
      expect(moved.data).toMatchObject({ id: sent.data.id, folders: [archive.id], starred: true });
      const archived = await nylas.messages.list({ identifier: grantId, queryParams: { subject, in: ['archive'] } });
      expect(archived.data.map((m) => m.id)).toEqual([sent.data.id]);
    },
  );

  step(
    'provider B, live: an event on the microsoft grant\u2019s primary calendar, and availability across it and an Agent Account',
    async () => {
      const grantId = need(microsoftTokens, 'the microsoft grant').grantId;
      const a = need(grantA, 'grant A');
      const day = midnight(6);
      // No notifyParticipants: the SDK sends none, and Graph emails the organizer's participants itself.
      const created = await nylas.events.create({
        identifier: grantId,
        queryParams: { calendarId: 'primary' },
        requestBody: {
          title: `Planning ${run}`,
          when: { startTime: day + 10 * 3600, endTime: day + 11 * 3600 },
          participants: [{ email: need(a.email, 'grant A\u2019s address'), status: 'noreply' }],
        },
      });
      expect(created.data.id).toMatch(/^[A-Za-z0-9_=-]{40,}$/);
      // `primary` is answered with the default calendar's own ID; an Outlook calendar has a name only.
      const calendars = (await nylas.calendars.list({ identifier: grantId })).data;
      const primary = need(
        calendars.find((c) => c.isPrimary),
        'a primary calendar',
      );
      expect(primary).toMatchObject({ id: expect.any(String), name: 'Calendar', readOnly: false });
      expect(created.data).toMatchObject({ title: `Planning ${run}`, calendarId: primary.id, busy: true });
      expect(created.data.participants.map((p) => p.email)).toEqual([a.email]);
      const listed = await nylas.events.list({
        identifier: grantId,
        queryParams: { calendarId: 'primary', start: String(day), end: String(day + DAY) },
      });
      expect(listed.data.map((e) => e.id)).toContain(created.data.id);
      const imported = await nylas.events.listImportEvents({
        identifier: grantId,
        queryParams: { calendarId: 'primary', start: day, end: day + DAY },
      });
      expect(imported.data.map((e) => e.id)).toContain(created.data.id);
      // Both accounts free from 09:00 to 12:00 but for the microsoft grant's event: the slots skip 10:00–11:00.
      const availability = await nylas.calendars.getAvailability({
        requestBody: {
          startTime: day + 9 * 3600,
          endTime: day + 12 * 3600,
          durationMinutes: 60,
          intervalMinutes: 60,
          participants: [{ email: microsoftUser }, { email: need(a.email, 'grant A\u2019s address') }],
          availabilityRules: { availabilityMethod: AvailabilityMethod.Collective },
        },
      });
      expect(availability.data.timeSlots.map((slot) => slot.startTime)).toEqual([day + 9 * 3600, day + 11 * 3600]);
      await nylas.events.destroy({
        identifier: grantId,
        eventId: created.data.id,
        queryParams: { calendarId: 'primary' },
      });
      const after = await nylas.events.list({
        identifier: grantId,
        queryParams: { calendarId: 'primary', start: String(day), end: String(day + DAY) },
      });
      expect(after.data.map((e) => e.id)).not.toContain(created.data.id);
    },
  );

  step(
    'provider B, live: contacts.create, find and list by email in the microsoft grant\u2019s Outlook contacts',
    async () => {
      const grantId = need(microsoftTokens, 'the microsoft grant').grantId;
      const email = `grace-${run}@example.org`;
      // Outlook's slots: emails keep no type, one mobile number, the business home page as the work web page.
      const created = await nylas.contacts.create({
        identifier: grantId,
        requestBody: {
          givenName: 'Grace',
          surname: `Hopper ${run}`,
          emails: [{ email, type: 'work' }],
          phoneNumbers: [{ number: '+1 555 0100', type: 'mobile' }],
          webPages: [{ url: 'https://grace.example.org', type: 'work' }],
        },
      });
      expect(created.data.id).toMatch(/^[A-Za-z0-9_=-]{40,}$/);
      const found = await nylas.contacts.find({ identifier: grantId, contactId: created.data.id, queryParams: {} });
      expect(found.data).toMatchObject({
        id: created.data.id,
        givenName: 'Grace',
        surname: `Hopper ${run}`,
        emails: [{ email }],
        phoneNumbers: [{ number: '+1 555 0100', type: 'mobile' }],
        webPages: [{ url: 'https://grace.example.org', type: 'work' }],
      });
      const listed = await nylas.contacts.list({ identifier: grantId, queryParams: { email } });
      expect(listed.data.map((c) => c.id)).toEqual([created.data.id]);
    },
  );

  step(
    'provider B, live: the scheduler with the microsoft grant as organizer: its availability, a booking\u2019s event at Graph, moved and cancelled',
    async () => {
      const grantId = need(microsoftTokens, 'the microsoft grant').grantId;
      const config = await nylas.scheduler.configurations.create({
        identifier: grantId,
        requestBody: {
          participants: [organizerOf(microsoftUser)],
          availability: { durationMinutes: 30, intervalMinutes: 30 },
          eventBooking: { title: `Outlook intro ${run}` },
          scheduler: { minBookingNotice: 0, availableDaysInFuture: 30 },
        },
      });
      const configurationId = (config.data as StoredConfiguration).id;
      const day = midnight(7);
      const slots = async () =>
        (
          await nylas.scheduler.availability.get({
            queryParams: { startTime: day, endTime: day + DAY, configurationId },
          })
        ).data.timeSlots.map((t) => t.startTime);
      expect(await slots()).toContain(day + 9 * 3600);
      const created = await nylas.scheduler.bookings.create({
        queryParams: { configurationId },
        requestBody: { startTime: day + 9 * 3600, endTime: day + 9 * 3600 + 1800, guest: schedulerGuest },
      });
      expect(created.data).toMatchObject({ status: 'booked', organizer: { email: microsoftUser } });
      // The booking's event is at Graph, on the organizer's default calendar.
      const event = await eventually(async () => {
        const found = await nylas.events.find({
          identifier: grantId,
          eventId: need(created.data.eventId, 'the booking\u2019s event'),
          queryParams: { calendarId: 'primary' },
        });
        expect(found.data.when).toMatchObject({ startTime: day + 9 * 3600 });
        return found.data;
      });
      expect(event.participants.map((p) => p.email)).toContain(schedulerGuest.email);
      expect(await slots()).not.toContain(day + 9 * 3600);
      await nylas.scheduler.bookings.reschedule({
        bookingId: created.data.bookingId,
        queryParams: { configurationId },
        requestBody: { startTime: day + 10 * 3600, endTime: day + 10 * 3600 + 1800 },
      });
      await eventually(async () => {
        const moved = await nylas.events.find({
          identifier: grantId,
          eventId: event.id,
          queryParams: { calendarId: 'primary' },
        });
        expect(moved.data.when).toMatchObject({ startTime: day + 10 * 3600 });
      });
      expect(await slots()).not.toContain(day + 10 * 3600);
      await nylas.scheduler.bookings.destroy({ bookingId: created.data.bookingId, queryParams: { configurationId } });
      expect(
        await eventually(async () => {
          const free = await slots();
          expect(free).toContain(day + 10 * 3600);
          return free;
        }),
      ).toContain(day + 9 * 3600);
      await nylas.scheduler.configurations.destroy({ identifier: grantId, configurationId });
    },
  );

  step('no connected-account request was answered 4xx or 5xx but the deliberate 401', async () => {
    const from = need(connectedFrom, 'the connected-account steps');
    const failed = exchanges
      .slice(from)
      .filter((e, i) => from + i !== deliberate401 && (e.status === undefined || e.status >= 400))
      .map((e) => `${e.method} ${e.url} → ${e.status ?? e.error}`);
    expect(failed).toEqual([]);
  });

  // ------------------------------------------------------------------------------------ grants, last
  step('grants.destroy', async () => {
    const b = need(grantB, 'grant B');
    const destroyed = await nylas.grants.destroy({ grantId: b.id });
    expect(typeof destroyed.requestId).toBe('string');
    const list = await nylas.grants.list();
    expect(list.data.map((g) => g.id)).not.toContain(b.id);
  });
});
