import { spawn, type ChildProcess } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  chownSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './index';
import { childProcess, type RunningService } from './service';

/**
 * A real IMAP and SMTP submission server for the IMAP provider's tests (test/support/dovecot.ts): Debian's
 * Dovecot 2.3 run as a plain foreground process (`dovecot -F`) with its whole state (config,
 * sockets, logs, maildirs) in one directory, on loopback, without TLS. Accounts live in a
 * passwd-file; submission relays into an SMTP sink; optionally a second passdb validates OAuth
 * access tokens (XOAUTH2, OAUTHBEARER) at an OpenID Connect server.
 */
export interface DovecotAccount {
  user: string;
  password: string;
}

export interface DovecotOptions {
  /** Where config, state and mail live; kept on stop. Absent: a temp dir, removed on stop. */
  dir?: string;
  accounts: DovecotAccount[];
  /** Where submission relays to (an SMTP sink). Absent: no submission service. */
  smtpRelay?: { host: string; port: number };
  oauth2?: {
    /** Dovecot's `introspection_url`: the userinfo endpoint (mode `auth`, the default) or an RFC 7662 introspection endpoint (mode `post`). */
    introspectionUrl: string;
    /** `auth`: GET with the token as bearer (userinfo); `post`: RFC 7662, authenticated as the client below; `get`: the token appended to the URL. */
    mode?: 'auth' | 'post' | 'get';
    /** The claim that must equal the login user name (default `email`). */
    usernameAttribute?: string;
    clientId?: string;
    clientSecret?: string;
  };
  /** 0 or absent: a free port. */
  imapPort?: number;
  submissionPort?: number;
}

export interface RunningDovecot extends RunningService {
  host: string;
  imapPort: number;
  /** Undefined without `smtpRelay`. */
  submissionPort: number | undefined;
  dir: string;
  /**
   * Adds (or replaces) an account; resolves once Dovecot accepts it. It rereads a changed passwd-file
   * at most once a second, so a login right after writing it could still meet the old one.
   */
  addAccount(user: string, password: string): Promise<void>;
  /** Stops and starts again on the same ports and mail (a server restart mid-sync). */
  restart(): Promise<void>;
}

export const DOVECOT_NOT_INSTALLED = 'Dovecot is not installed: apt-get install dovecot-imapd dovecot-submissiond';

/** The user the mail processes run as (Debian's nobody): the one user every Debian has. */
const MAIL_UID = 65534;
const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 20_000;

function findDovecot(): string {
  const candidates = [
    '/usr/sbin/dovecot',
    '/usr/local/sbin/dovecot',
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'dovecot')),
  ];
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  throw new Error(DOVECOT_NOT_INSTALLED);
}

/** Dovecot's own system users (Debian's package creates them): the login and internal processes run as these. */
function systemUserExists(name: string): boolean {
  try {
    return readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .some((line) => line.split(':')[0] === name);
  } catch {
    return false;
  }
}

function passwdLine({ user, password }: DovecotAccount): string {
  // A colon or line break would split the passwd-file entry; {PLAIN} takes the rest verbatim.
  if (!user || /[:\s]/.test(user))
    throw new Error(`Dovecot account name not usable in a passwd-file: ${JSON.stringify(user)}`);
  if (/[:\r\n]/.test(password)) throw new Error(`Dovecot password for ${user} contains ':' or a line break`);
  return `${user}:{PLAIN}${password}::::::\n`;
}

/** Settings values go on one line each: nothing may break out of it. */
function confValue(value: string): string {
  if (/[\r\n]/.test(value)) throw new Error(`Dovecot setting value with a line break: ${JSON.stringify(value)}`);
  return value;
}

function dovecotConf(
  d: string,
  ports: { imap: number; submission: number | undefined },
  options: DovecotOptions,
  users: { login: string; internal: string },
): string {
  const specialUse: [string, string][] = [
    ['Sent', '\\Sent'],
    ['Drafts', '\\Drafts'],
    ['Trash', '\\Trash'],
    ['Archive', '\\Archive'],
    ['Junk', '\\Junk'],
  ];
  const lines = [
    '# Written by scripts/local-stack/dovecot.ts: a loopback-only test server.',
    `base_dir = ${d}/run`,
    `state_dir = ${d}/state`,
    `log_path = ${d}/dovecot.log`,
    `instance_name = dovecot-${ports.imap}`,
    `listen = ${HOST}`,
    `protocols = imap${ports.submission ? ' submission' : ''}`,
    'ssl = no',
    'disable_plaintext_auth = no',
    'auth_verbose = yes',
    // Tests try wrong passwords on purpose: no 2 s wait after each.
    'auth_failure_delay = 0',
    `auth_mechanisms = plain login${options.oauth2 ? ' xoauth2 oauthbearer' : ''}`,
    `default_login_user = ${users.login}`,
    `default_internal_user = ${users.internal}`,
    'first_valid_uid = 1',
    `mail_location = maildir:~/Maildir`,
    'passdb {',
    '  driver = passwd-file',
    // Passwords only: an OAuth token is no password (and a password no token, below).
    '  mechanisms = plain login',
    `  args = scheme=PLAIN ${d}/passwd`,
    '}',
    ...(options.oauth2
      ? [
          'passdb {',
          '  driver = oauth2',
          '  mechanisms = xoauth2 oauthbearer',
          `  args = ${d}/dovecot-oauth2.conf.ext`,
          '}',
        ]
      : []),
    'userdb {',
    '  driver = static',
    `  args = uid=${MAIL_UID} gid=${MAIL_UID} home=${d}/home/%u`,
    '}',
    'namespace inbox {',
    '  inbox = yes',
    '  separator = /',
    ...specialUse.flatMap(([name, flag]) => [
      `  mailbox ${name} {`,
      `    special_use = ${flag}`,
      '    auto = subscribe',
      '  }',
    ]),
    '}',
    // Nor the growing delay (up to 15 s) anvil puts on an address after failed logins, which would slow
    // every later test's login from 127.0.0.1: the auth process, which may not open this socket, skips it.
    'service anvil {',
    '  unix_listener anvil-auth-penalty {',
    '    mode = 0',
    '  }',
    '}',
    'service imap-login {',
    '  inet_listener imap {',
    `    port = ${ports.imap}`,
    '  }',
    '  inet_listener imaps {',
    '    port = 0',
    '  }',
    '}',
  ];
  if (ports.submission && options.smtpRelay) {
    lines.push(
      'service submission-login {',
      '  inet_listener submission {',
      `    port = ${ports.submission}`,
      '  }',
      '}',
      `submission_relay_host = ${confValue(options.smtpRelay.host)}`,
      `submission_relay_port = ${options.smtpRelay.port}`,
      // The sink is on loopback: Dovecot relays as the authenticated user, no credentials of its own.
      'submission_relay_trusted = yes',
      'hostname = localhost',
    );
  }
  return `${lines.join('\n')}\n`;
}

function oauth2Conf(oauth2: NonNullable<DovecotOptions['oauth2']>): string {
  const mode = oauth2.mode ?? 'auth';
  let url = oauth2.introspectionUrl;
  if (mode === 'post' && oauth2.clientId) {
    // Dovecot 2.3 authenticates the introspection POST with the URL's user info (HTTP Basic).
    const parsed = new URL(url);
    parsed.username = encodeURIComponent(oauth2.clientId);
    parsed.password = encodeURIComponent(oauth2.clientSecret ?? '');
    url = parsed.href;
  }
  const lines = [
    `introspection_url = ${confValue(url)}`,
    `introspection_mode = ${mode}`,
    `username_attribute = ${confValue(oauth2.usernameAttribute ?? 'email')}`,
  ];
  if (mode === 'post') lines.push('active_attribute = active', 'active_value = true');
  return `${lines.join('\n')}\n`;
}

function logTail(d: string): string {
  try {
    return readFileSync(join(d, 'dovecot.log'), 'utf8').split('\n').slice(-15).join('\n').trim();
  } catch {
    return '';
  }
}

/**
 * Whether the IMAP port answers with its greeting (`* OK`), and, given credentials, whether
 * AUTHENTICATE PLAIN with them succeeds. False on a refused connection or after 2 s.
 */
function imapAnswers(port: number, credentials?: DovecotAccount): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, HOST);
    let received = '';
    let greeted = false;
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(2000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
      if (!greeted) {
        if (!received.includes('\r\n')) return;
        if (!received.startsWith('* OK') || !credentials) return done(received.startsWith('* OK'));
        greeted = true;
        socket.write(
          `a AUTHENTICATE PLAIN ${Buffer.from(`\0${credentials.user}\0${credentials.password}`).toString('base64')}\r\n`,
        );
      }
      const tagged = /^a (OK|NO|BAD)/m.exec(received);
      if (tagged) done(tagged[1] === 'OK');
    });
  });
}

/**
 * Whether any process of the group `pgid` still runs. From /proc where there is one: a child that
 * outlived the master is reparented, and stays a zombie (still in the group) until its new parent
 * reaps it, which some containers' init never does.
 */
function groupAlive(pgid: number): boolean {
  if (existsSync('/proc/self/stat')) {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        // pid (comm) state ppid pgrp …: comm may hold spaces and parentheses, so parse after the last ')'.
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
        const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') return true;
      } catch {
        // gone meanwhile
      }
    }
    return false;
  }
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The master in a process group of its own (spawned detached), so that stopping it can make sure
 * none of the processes it forked (imap, auth, login, log, anvil…) stays behind.
 */
class DovecotProcess {
  private readonly handle: ReturnType<typeof childProcess>;
  private readonly killGroupOnExit = () => signalGroup(this.child.pid!, 'SIGKILL');
  exited = false;
  output = '';

  constructor(private readonly child: ChildProcess) {
    this.handle = childProcess(child);
    process.once('exit', this.killGroupOnExit);
    child.stdout?.on('data', (chunk: Buffer) => (this.output = (this.output + chunk.toString()).slice(-4000)));
    child.stderr?.on('data', (chunk: Buffer) => (this.output = (this.output + chunk.toString()).slice(-4000)));
    child.once('exit', () => (this.exited = true));
  }

  /**
   * SIGTERM to the master, then to what it left (the mail processes of open sessions outlive it),
   * which ends those sessions as a server shutdown does; SIGKILL to anything still there after 3 s.
   */
  async stop(): Promise<void> {
    const pgid = this.child.pid;
    await this.handle.stop();
    if (pgid !== undefined && groupAlive(pgid)) {
      signalGroup(pgid, 'SIGTERM');
      const deadline = Date.now() + 3000;
      while (groupAlive(pgid) && Date.now() < deadline) await sleep(25);
      if (groupAlive(pgid)) {
        signalGroup(pgid, 'SIGKILL');
        const killed = Date.now() + 2000;
        while (groupAlive(pgid) && Date.now() < killed) await sleep(20);
      }
    }
    process.removeListener('exit', this.killGroupOnExit);
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // gone
  }
}

export async function startDovecot(options: DovecotOptions): Promise<RunningDovecot> {
  const binary = findDovecot();
  const users = { login: 'dovenull', internal: 'dovecot' };
  for (const name of Object.values(users)) {
    if (!systemUserExists(name))
      throw new Error(
        `Dovecot needs the system user ${name} (Debian's dovecot-core creates it): ${DOVECOT_NOT_INSTALLED}`,
      );
  }
  const ownDir = options.dir === undefined;
  const d = options.dir ?? mkdtempSync(join(tmpdir(), 'dovecot-'));
  try {
    // The auth process (user dovecot) reads the passwd-file, the mail processes (65534) their homes.
    mkdirSync(d, { recursive: true });
    chmodSync(d, 0o755);
    mkdirSync(join(d, 'home'), { recursive: true });
    try {
      chownSync(join(d, 'home'), MAIL_UID, MAIL_UID);
    } catch (error) {
      throw new Error(
        `Dovecot: cannot give ${join(d, 'home')} to uid ${MAIL_UID} (${(error as Error).message}); the test Dovecot runs as root, as it switches to the users dovecot, dovenull and ${MAIL_UID}`,
      );
    }

    const accounts = new Map<string, string>();
    const writePasswd = () =>
      writeFileSync(
        join(d, 'passwd'),
        [...accounts].map(([user, password]) => passwdLine({ user, password })).join(''),
        { mode: 0o644 },
      );
    for (const account of options.accounts) {
      passwdLine(account);
      accounts.set(account.user, account.password);
    }
    writePasswd();

    const ports = {
      imap: options.imapPort || (await freePort()),
      submission: options.smtpRelay ? options.submissionPort || (await freePort()) : undefined,
    };
    const conf = join(d, 'dovecot.conf');
    writeFileSync(conf, dovecotConf(d, ports, options, users), { mode: 0o644 });
    // Read by the auth process (user dovecot), like the passwd-file: test credentials on loopback only.
    if (options.oauth2) writeFileSync(join(d, 'dovecot-oauth2.conf.ext'), oauth2Conf(options.oauth2), { mode: 0o644 });

    let running: DovecotProcess | undefined;

    const launch = async () => {
      const child = spawn(binary, ['-F', '-c', conf], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      const proc = new DovecotProcess(child);
      const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));
      const deadline = Date.now() + START_TIMEOUT_MS;
      for (;;) {
        const failed = await Promise.race([spawnError, sleep(0).then(() => undefined)]);
        if (failed || proc.exited) {
          await proc.stop();
          const hint = process.getuid?.() !== 0 ? ' (it must run as root here)' : '';
          throw new Error(
            `Dovecot did not start${hint}: ${failed?.message ?? ''}${proc.output.trim()}\n${logTail(d)}`.trim(),
          );
        }
        if (await imapAnswers(ports.imap)) break;
        if (Date.now() > deadline) {
          await proc.stop();
          throw new Error(
            `Dovecot did not answer on IMAP port ${ports.imap} within ${START_TIMEOUT_MS / 1000} s:\n${proc.output.trim()}\n${logTail(d)}`,
          );
        }
        await sleep(50);
      }
      running = proc;
    };

    await launch();

    const halt = async () => {
      const proc = running;
      running = undefined;
      await proc?.stop();
    };

    return {
      endpoint: `imap://${HOST}:${ports.imap}`,
      host: HOST,
      imapPort: ports.imap,
      submissionPort: ports.submission,
      dir: d,
      async addAccount(user, password) {
        passwdLine({ user, password });
        accounts.set(user, password);
        writePasswd();
        const deadline = Date.now() + 5000;
        while (!(await imapAnswers(ports.imap, { user, password }))) {
          if (Date.now() > deadline)
            throw new Error(`Dovecot did not accept the new account ${user} within 5 s:\n${logTail(d)}`);
          await sleep(100);
        }
      },
      async restart() {
        await halt();
        await launch();
      },
      async stop() {
        await halt();
        if (ownDir) rmSync(d, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (ownDir && existsSync(d)) rmSync(d, { recursive: true, force: true });
    throw error;
  }
}
