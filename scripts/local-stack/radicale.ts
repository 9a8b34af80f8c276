import { spawn } from 'node:child_process';
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { freePort } from './index';
import { childProcess, httpEndpoint, type RunningService } from './service';

/**
 * A real CalDAV and CardDAV server for the DAV client's tests: Debian's Radicale 3 run as a plain
 * foreground process with its whole state (config, htpasswd, collections, log) in one directory, on
 * loopback, without TLS. Accounts live in a plain-text htpasswd file; each user may use only their
 * own collections (rights `owner_only`). Radicale ignores CalDAV `expand`: clients expand recurrence.
 */
export interface RadicaleAccount {
  user: string;
  password: string;
}

export interface RadicaleOptions {
  accounts: RadicaleAccount[];
  /** 0 or absent: a free port. */
  port?: number;
  /** Where config, accounts, collections and the log live; kept on stop. Absent: a temp dir, removed on stop. */
  dir?: string;
}

/** `endpoint` is the server root without its trailing slash, as for the other local services. */
export interface RunningRadicale extends RunningService {
  /** The server root, with its trailing slash: `http://127.0.0.1:<port>/`. */
  url: string;
  port: number;
  dir: string;
  /** Adds (or replaces) an account; resolves once Radicale accepts its password. */
  addAccount(user: string, password: string): Promise<void>;
}

export const RADICALE_NOT_INSTALLED = 'Radicale is not installed: apt-get install radicale';

const HOST = '127.0.0.1';
const START_TIMEOUT_MS = 20_000;
const LOG = 'radicale.log';

/**
 * The command that runs Radicale: Debian's `radicale` script, else the module under the system
 * Python (a pyenv `python3` first on PATH usually lacks the Debian package's modules).
 */
function findRadicale(): { command: string; args: string[] } {
  const executable = (path: string) => {
    try {
      accessSync(path, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  const scripts = [
    '/usr/bin/radicale',
    '/usr/local/bin/radicale',
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'radicale')),
  ];
  const script = scripts.find(executable);
  if (script) return { command: script, args: [] };
  for (const python of ['/usr/bin/python3', '/usr/local/bin/python3']) {
    if (executable(python) && existsSync('/usr/lib/python3/dist-packages/radicale'))
      return { command: python, args: ['-m', 'radicale'] };
  }
  throw new Error(RADICALE_NOT_INSTALLED);
}

function htpasswdLine({ user, password }: RadicaleAccount): string {
  // A colon or line break would split the entry; with plain encryption the rest of the line is the password.
  if (!user || /[:\s/]/.test(user))
    throw new Error(`Radicale account name not usable in an htpasswd file: ${JSON.stringify(user)}`);
  if (/[\r\n]/.test(password)) throw new Error(`Radicale password for ${user} contains a line break`);
  return `${user}:${password}\n`;
}

/**
 * Every setting that matters spelled out: `--config` replaces the default file list, but nothing of
 * /etc/radicale/config (Debian's remote_user auth, its rights file) may leak in either way.
 */
function radicaleConf(d: string, port: number): string {
  return [
    '# Written by scripts/local-stack/radicale.ts: a loopback-only test server.',
    '[server]',
    `hosts = ${HOST}:${port}`,
    'ssl = False',
    'max_connections = 20',
    '[auth]',
    'type = htpasswd',
    `htpasswd_filename = ${d}/users`,
    'htpasswd_encryption = plain',
    // Tests try wrong passwords on purpose: no 1 s wait after each.
    'delay = 0',
    '[rights]',
    'type = owner_only',
    '[storage]',
    'type = multifilesystem',
    `filesystem_folder = ${d}/collections`,
    '[web]',
    'type = none',
    '[logging]',
    'level = info',
    'mask_passwords = True',
    '',
  ].join('\n');
}

function logTail(d: string): string {
  try {
    return readFileSync(join(d, LOG), 'utf8').split('\n').slice(-15).join('\n').trim();
  } catch {
    return '';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The status of an OPTIONS request to the root (with credentials, if given), or undefined when
 * nothing answers. OPTIONS needs no login in Radicale; with credentials a PROPFIND checks them.
 */
async function probe(url: string, credentials?: RadicaleAccount): Promise<number | undefined> {
  try {
    const headers: Record<string, string> = credentials
      ? {
          authorization: `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`).toString('base64')}`,
          depth: '0',
        }
      : {};
    const response = await fetch(url, {
      method: credentials ? 'PROPFIND' : 'OPTIONS',
      headers,
      signal: AbortSignal.timeout(2000),
    });
    await response.arrayBuffer();
    return response.status;
  } catch {
    return undefined;
  }
}

export async function startRadicale(options: RadicaleOptions): Promise<RunningRadicale> {
  const { command, args } = findRadicale();
  const ownDir = options.dir === undefined;
  const d = options.dir ?? mkdtempSync(join(tmpdir(), 'radicale-'));
  try {
    mkdirSync(join(d, 'collections'), { recursive: true });
    const accounts = new Map<string, string>();
    const writeUsers = () =>
      writeFileSync(
        join(d, 'users'),
        [...accounts].map(([user, password]) => htpasswdLine({ user, password })).join(''),
        { mode: 0o600 },
      );
    for (const account of options.accounts) {
      htpasswdLine(account);
      accounts.set(account.user, account.password);
    }
    writeUsers();

    const port = options.port || (await freePort());
    const conf = join(d, 'config');
    writeFileSync(conf, radicaleConf(d, port), { mode: 0o644 });
    const url = `${httpEndpoint(HOST, port)}/`;

    // Radicale logs to stderr: straight into the log file, which outlives the process for a post-mortem.
    const log = openSync(join(d, LOG), 'a');
    const child = spawn(command, [...args, '--config', conf], {
      stdio: ['ignore', log, log],
      env: { ...process.env, RADICALE_CONFIG: conf },
    });
    closeSync(log);
    const handle = childProcess(child);
    let exited = false;
    child.once('exit', () => (exited = true));
    const spawnError = new Promise<Error>((resolve) => child.once('error', resolve));

    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const failed = await Promise.race([spawnError, sleep(0).then(() => undefined)]);
      if (failed || exited) {
        await handle.stop();
        throw new Error(`Radicale did not start: ${failed?.message ?? ''}\n${logTail(d)}`.trim());
      }
      if ((await probe(url)) !== undefined) break;
      if (Date.now() > deadline) {
        await handle.stop();
        throw new Error(`Radicale did not answer on ${url} within ${START_TIMEOUT_MS / 1000} s:\n${logTail(d)}`);
      }
      await sleep(50);
    }

    return {
      url,
      endpoint: url.slice(0, -1),
      port,
      dir: d,
      async addAccount(user, password) {
        htpasswdLine({ user, password });
        accounts.set(user, password);
        writeUsers();
        // Radicale rereads the htpasswd file when it changes; wait until the new password is taken.
        const until = Date.now() + 5000;
        for (;;) {
          const status = await probe(url, { user, password });
          if (status !== undefined && status !== 401 && status !== 403) return;
          if (Date.now() > until)
            throw new Error(
              `Radicale did not accept the new account ${user} within 5 s (status ${status}):\n${logTail(d)}`,
            );
          await sleep(100);
        }
      },
      async stop() {
        await handle.stop();
        if (ownDir) rmSync(d, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (ownDir && existsSync(d)) rmSync(d, { recursive: true, force: true });
    throw error;
  }
}
