import { ImapFlow } from 'imapflow';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  startDovecot,
  type DovecotAccount,
  type DovecotOptions,
  type RunningDovecot,
} from '../../scripts/local-stack/dovecot';
import { startSmtpSink } from '../../scripts/local-stack/smtp-sink';
import type { ApiClient } from './api';
import type { SunkMessage } from './mail';
import { jobsDone } from './outbox-relay';

/**
 * One real Dovecot (IMAP + submission) per test file: started in beforeAll, its submission relaying
 * into an SMTP sink of its own (so a file reads only the mail it sent), both stopped in afterAll.
 * The accessors throw until beforeAll has run.
 */
export interface DovecotHarness {
  readonly host: string;
  readonly imapPort: number;
  readonly submissionPort: number;
  readonly server: RunningDovecot;
  readonly sink: {
    readonly smtpUrl: string;
    /** Summaries of what the sink received, oldest first (`to`: only mail for that recipient). */
    messages(to?: string): Promise<SunkMessage[]>;
    raw(id: string): Promise<string>;
    /** Polls until mail for `to` arrived (an empty list after `timeoutMs`). */
    waitFor(to: string, timeoutMs?: number): Promise<SunkMessage[]>;
  };
}

export function useDovecot(
  accounts: DovecotAccount[],
  options: { oauth2?: () => DovecotOptions['oauth2'] } = {},
): DovecotHarness {
  let server: RunningDovecot | undefined;
  let sink: Awaited<ReturnType<typeof startSmtpSink>> | undefined;
  const started = () => {
    if (!server || !sink)
      throw new Error('useDovecot: Dovecot is not running (outside the tests of the file that called useDovecot?)');
    return { server, sink };
  };

  beforeAll(async () => {
    sink = await startSmtpSink({ smtpPort: 0, httpPort: 0 });
    const relay = new URL(sink.smtpUrl);
    try {
      server = await startDovecot({
        accounts,
        smtpRelay: { host: relay.hostname, port: Number(relay.port) },
        oauth2: options.oauth2?.(),
      });
    } catch (error) {
      await sink.stop();
      sink = undefined;
      throw error;
    }
  });

  afterAll(async () => {
    await server?.stop();
    await sink?.stop();
    server = undefined;
    sink = undefined;
  });

  const messages = async (to?: string): Promise<SunkMessage[]> => {
    const response = await fetch(`${started().sink.httpUrl}/messages${to ? `?to=${encodeURIComponent(to)}` : ''}`);
    return (await response.json()) as SunkMessage[];
  };

  return {
    get host() {
      return started().server.host;
    },
    get imapPort() {
      return started().server.imapPort;
    },
    get submissionPort() {
      return started().server.submissionPort!;
    },
    get server() {
      return started().server;
    },
    sink: {
      get smtpUrl() {
        return started().sink.smtpUrl;
      },
      messages,
      raw: async (id) => (await fetch(`${started().sink.httpUrl}/messages/${encodeURIComponent(id)}/raw`)).text(),
      async waitFor(to, timeoutMs = 5000) {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const found = await messages(to);
          if (found.length || Date.now() > deadline) return found;
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      },
    },
  };
}

/** An IMAP grant of an account of this Dovecot, connected through `POST /v3/connect/custom` (its jobs done). */
export async function connectImapGrant(
  api: ApiClient,
  dovecot: DovecotHarness,
  user: string,
  password: string,
): Promise<{ id: string; email: string }> {
  const response = await api.post('/v3/connect/custom', {
    provider: 'imap',
    settings: {
      imap_username: user,
      imap_password: password,
      imap_host: '127.0.0.1',
      imap_port: dovecot.imapPort,
      smtp_host: '127.0.0.1',
      smtp_port: dovecot.submissionPort,
    },
  });
  expect(response.status, response.text).toBe(201);
  await jobsDone();
  return response.body.data;
}

/** A client of an account of this Dovecot, logged in, as another mail program would be. */
export async function openImapClient(dovecot: DovecotHarness, user: string, password: string): Promise<ImapFlow> {
  const client = new ImapFlow({
    host: '127.0.0.1',
    port: dovecot.imapPort,
    secure: false,
    auth: { user, pass: password },
    logger: false,
  });
  await client.connect();
  return client;
}

/** Runs `act` in an IMAP session of an account of this Dovecot, as another client would (logged out after). */
export async function withImapSession<T>(
  dovecot: DovecotHarness,
  user: string,
  password: string,
  act: (client: ImapFlow) => Promise<T>,
): Promise<T> {
  const client = await openImapClient(dovecot, user, password);
  try {
    return await act(client);
  } finally {
    await client.logout();
  }
}
