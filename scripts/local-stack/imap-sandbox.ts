import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DavClient } from '#shared/dav/client';
import { DOVECOT_NOT_INSTALLED, startDovecot } from './dovecot';
import { RADICALE_NOT_INSTALLED, startRadicale, type RunningRadicale } from './radicale';
import { alive, type ImapSandbox } from './instances';

export type { ImapSandbox };

/**
 * `npm start`'s IMAP sandbox: a real Dovecot (IMAP, and SMTP submission relaying into the local
 * outbound sink) with one account, to connect as an IMAP grant without any outside mail server; and
 * where Radicale is installed, a CalDAV and CardDAV server of the same account (a calendar and an
 * address book made) for its calendars and contacts. Both are optional: where one is missing (or
 * cannot run), npm start goes on without it and says why.
 */
export const SANDBOX_USERNAME = 'sandbox@imap.localhost';
export const SANDBOX_INSTALL = 'apt-get install dovecot-imapd dovecot-submissiond';

/**
 * Dovecot's sockets live under its directory (`run/`): a Unix socket path has at most 107 bytes, and
 * Dovecot's longest names take about 30 below it.
 */
const MAX_DIR_LENGTH = 60;

/**
 * Whether every directory from `dir` up is searchable by others, as Dovecot's auth and mail processes
 * (other users) need. One not made yet will be (by startDovecot, with the usual umask).
 */
function searchableByAll(dir: string): boolean {
  for (let d = dir; ; d = dirname(d)) {
    if (existsSync(d) && !(statSync(d).mode & 0o001)) return false;
    if (dirname(d) === d) return true;
  }
}

/** Whether `pid` runs: a zombie (killed, its parent gone, and not reaped yet by some containers' init) does not. */
function running(pid: number): boolean {
  if (!alive(pid)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return true; // no /proc: trust the signal
  }
}

/**
 * Stops the Dovecot of an instance that died without stopping it (killed: its Dovecot runs in a
 * process group of its own) and removes its folder. Folders are named by the instance's process ID.
 */
function removeStale(parent: string, ownPid: number): void {
  let names: string[] = [];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === ownPid || running(pid)) continue;
    try {
      const master = Number(readFileSync(join(parent, name, 'run', 'master.pid'), 'utf8').trim());
      // Still that Dovecot (not a process that got its ID since), leading its own process group (spawned
      // detached): the group is Dovecot's alone.
      const command = readFileSync(`/proc/${master}/cmdline`, 'utf8');
      if (Number.isInteger(master) && master > 1 && command.includes(join(parent, name, 'dovecot.conf')))
        process.kill(-master, 'SIGKILL');
    } catch {
      // no pid file, or gone already
    }
    rmSync(join(parent, name), { recursive: true, force: true });
  }
}

/**
 * Starts the sandbox in `parent/<pid>` (or a temporary folder where that path would be too long, or
 * not reachable by Dovecot's users), relaying submissions to `relay`. Resolves with the sandbox and
 * its stop, or with `off`: one sentence saying why there is none and what to do. Never rejects.
 */
/** The sandbox account's CalDAV and CardDAV server, with a calendar and an address book; or why there is none. Never rejects. */
async function startDav(
  dir: string,
  user: string,
  password: string,
  port?: number,
): Promise<{ radicale: RunningRadicale } | { off: string }> {
  let radicale: RunningRadicale | undefined;
  try {
    radicale = await startRadicale({ dir, accounts: [{ user, password }], ...(port ? { port } : {}) });
    const client = new DavClient({
      fetch: (input, init) => fetch(input, init),
      auth: { type: 'basic', username: user, password },
    });
    const home = `${radicale.url}${encodeURIComponent(user)}/`;
    await client.makeCalendar(`${home}calendar/`, { name: 'Calendar' });
    await client.makeAddressBook(`${home}contacts/`, { name: 'Contacts' });
    return { radicale };
  } catch (error) {
    await radicale?.stop();
    const message = (error as Error).message;
    return {
      off:
        message === RADICALE_NOT_INSTALLED
          ? 'off: Radicale is not installed (apt-get install radicale)'
          : `off: Radicale did not start: ${message.split('\n')[0]}`,
    };
  }
}

export async function startImapSandbox(options: {
  parent: string;
  relay: { host: string; port: number };
  imapPort?: number;
  smtpPort?: number;
  davPort?: number;
}): Promise<{ sandbox: ImapSandbox; stop(): Promise<void> } | { off: string }> {
  let dir: string | undefined;
  try {
    removeStale(options.parent, process.pid);
    const own = join(options.parent, String(process.pid));
    dir =
      own.length <= MAX_DIR_LENGTH && searchableByAll(options.parent)
        ? own
        : mkdtempSync(join(tmpdir(), 'switchboard-imap-'));
    const password = randomBytes(12).toString('base64url');
    const dovecot = await startDovecot({
      dir,
      accounts: [{ user: SANDBOX_USERNAME, password }],
      smtpRelay: options.relay,
      imapPort: options.imapPort,
      submissionPort: options.smtpPort,
    });
    const dav = await startDav(join(dir, 'dav'), SANDBOX_USERNAME, password, options.davPort);
    return {
      sandbox: {
        host: dovecot.host,
        imapPort: dovecot.imapPort,
        smtpPort: dovecot.submissionPort!,
        username: SANDBOX_USERNAME,
        password,
        ...('radicale' in dav ? { davUrl: dav.radicale.url } : { davOff: dav.off }),
      },
      stop: async () => {
        if ('radicale' in dav) await dav.radicale.stop();
        await dovecot.stop();
        rmSync(dovecot.dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (dir) rmSync(dir, { recursive: true, force: true });
    const message = (error as Error).message;
    if (message === DOVECOT_NOT_INSTALLED) return { off: `off: Dovecot is not installed (${SANDBOX_INSTALL})` };
    if (process.getuid?.() !== 0)
      return {
        off: `off: Dovecot runs only as root here (it switches to its own users), and npm start runs as uid ${process.getuid?.()}`,
      };
    return { off: `off: Dovecot did not start: ${message.split('\n')[0]}` };
  }
}
