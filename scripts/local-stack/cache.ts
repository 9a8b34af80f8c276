import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { alive } from './instances';
import { ROOT } from './serverless-config';

/**
 * The checkout's cache of what `npm start` makes from its sources and dependencies and can use again
 * on the next start: the function bundles (build.ts), DynamoDB Local's class archive
 * (dynamodb-local.ts), Node's compiled code (NODE_COMPILE_CACHE). `SWITCHBOARD_CACHE_DIR` moves it (the
 * start bench points it at an empty folder to time a first start).
 *
 * Instances of one checkout share it without touching each other's work: an entry is made whole in a
 * folder named after the process making it (`<name>.tmp-<pid>`), then renamed into place, so a
 * reader sees a complete entry or none; entries are named by a hash of everything they were made from,
 * so two makers of one entry make the same thing, and the second rename just loses. (DynamoDB Local's
 * folder, whose files name each other by path, is made in place under a lock file instead.)
 */
export const cacheDir = () => process.env.SWITCHBOARD_CACHE_DIR || join(ROOT, '.switchboard', 'cache');

/** A hex digest of `parts`, in order. */
export function digest(...parts: (string | Buffer)[]): string {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(createHash('sha256').update(part).digest());
  return hash.digest('hex').slice(0, 32);
}

const TEMPORARY = /\.tmp-(\d+)$/;

/** A new folder for this process to make entry `name` of `dir` in. */
export function makingFolder(dir: string, name: string): string {
  const folder = join(dir, `${name}.tmp-${process.pid}`);
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  return folder;
}

/** Renames the made `folder` to entry `name` of `dir`; false (and the folder removed) when another process made it first. */
export function publish(folder: string, dir: string, name: string): boolean {
  try {
    renameSync(folder, join(dir, name));
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOTEMPTY' && code !== 'EEXIST') throw error;
    rmSync(folder, { recursive: true, force: true });
    return false;
  }
}

/** The entries of `dir`, newest first (folders being made excluded). */
export function entries(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const dated = names
    .filter((name) => !TEMPORARY.test(name))
    .map((name) => {
      try {
        return { name, mtime: statSync(join(dir, name)).mtimeMs };
      } catch {
        return undefined;
      }
    })
    .filter((entry) => entry !== undefined);
  return dated.sort((a, b) => b.mtime - a.mtime).map((entry) => entry.name);
}

/**
 * Removes from `dir` the entries past the `keep` newest and the folders of makers that are gone; one
 * being made by a live process stays.
 */
export function prune(dir: string, keep: number): void {
  for (const name of entries(dir).slice(keep)) rmSync(join(dir, name), { recursive: true, force: true });
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const maker = TEMPORARY.exec(name);
    if (maker && !alive(Number(maker[1]))) rmSync(join(dir, name), { recursive: true, force: true });
  }
}
