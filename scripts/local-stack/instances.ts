import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Running `npm start` instances of one checkout, one file each: `.switchboard/local-env.<port>.json`
 * holds the instance's API port, process ID, the environment of its emulators and its IMAP sandbox's
 * settings (when Dovecot runs; scripts, the README's among them, read them here), written when it
 * is ready and removed when it stops. The admin CLI finds a stack here: the only one running, or the
 * one whose port it is given. Files of instances that died without cleaning up are ignored and removed.
 */
/** The IMAP sandbox of an instance (scripts/local-stack/imap-sandbox.ts), as its instance file records it. */
export interface ImapSandbox {
  host: string;
  imapPort: number;
  /** SMTP submission: plain text on loopback, AUTH with the same login; what it accepts goes to the outbound sink. */
  smtpPort: number;
  username: string;
  password: string;
  /** A CalDAV and CardDAV server of the same account (Radicale, when installed): a calendar and an address book ready. */
  davUrl?: string;
  /** Why there is none, when there is none. */
  davOff?: string;
}

export interface Instance {
  port: number;
  pid: number;
  env: Record<string, string>;
  imapSandbox?: ImapSandbox;
}

const FILE = /^local-env\.(\d+)\.json$/;

export const instanceFile = (dir: string, port: number) => join(dir, `local-env.${port}.json`);

export function recordInstance(dir: string, instance: Instance): string {
  mkdirSync(dir, { recursive: true });
  const file = instanceFile(dir, instance.port);
  writeFileSync(file, JSON.stringify(instance, null, 2), { mode: 0o600 });
  return file;
}

/** Whether a process `pid` exists (ours or another user's). */
export const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Instances whose process still runs, by port; stale files are removed. */
export function runningInstances(dir: string, isAlive: (pid: number) => boolean = alive): Instance[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const found: Instance[] = [];
  for (const name of names) {
    if (!FILE.test(name)) continue;
    const file = join(dir, name);
    let instance: Instance;
    try {
      instance = JSON.parse(readFileSync(file, 'utf8')) as Instance;
    } catch {
      continue; // being written, or not ours
    }
    if (typeof instance.pid === 'number' && isAlive(instance.pid)) found.push(instance);
    else rmSync(file, { force: true });
  }
  return found.sort((a, b) => a.port - b.port);
}

/** The instance to use: the one on `port` if given, else the only one running; otherwise says why not. */
export function chooseInstance(instances: Instance[], port?: number): { instance: Instance } | { error: string } {
  if (port !== undefined) {
    const instance = instances.find((i) => i.port === port);
    if (instance) return { instance };
    return {
      error: `no npm start is running on port ${port}${instances.length ? ` (running: ${instances.map((i) => i.port).join(', ')})` : ''}`,
    };
  }
  if (instances.length === 1) return { instance: instances[0]! };
  if (!instances.length)
    return { error: 'TABLE_NAME is not set and no local stack is running (start one with `npm start`).' };
  return {
    error: `several npm start instances are running (ports ${instances.map((i) => i.port).join(', ')}): choose one with --port PORT`,
  };
}
