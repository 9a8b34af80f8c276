import { existsSync, readFileSync, readdirSync, readlinkSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, loadServerlessConfig } from '../../scripts/local-stack/serverless-config';

/**
 * The Node.js the project runs on locally: the one Lambda runs (serverless.yml's provider.runtime,
 * `nodejs24.x`), installed by `npm install` from the npm registry as the optional dependency
 * `node-<platform>-<arch>` and put first on PATH by scripts/node24.sh.
 */

/** The major version of serverless.yml's runtime: '24' for `nodejs24.x`. */
export function lambdaNodeMajor(): string {
  const runtime = String(loadServerlessConfig().provider.runtime);
  const major = /^nodejs(\d+)\.x$/.exec(runtime)?.[1];
  if (!major) throw new Error(`serverless.yml's provider.runtime is not a Node.js runtime: ${runtime}`);
  return major;
}

/** The package of this platform's Node binary, if package.json names one (none for macOS on Apple silicon). */
export function nodeBinaryPackage(): string | undefined {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    optionalDependencies?: Record<string, string>;
  };
  const name = `node-${process.platform}-${process.arch}`;
  return name in (pkg.optionalDependencies ?? {}) ? name : undefined;
}

/** The installed binary of that package, as the kernel names it (symbolic links resolved). */
export function installedNode(name: string): string {
  const binary = join(ROOT, 'node_modules', name, 'bin', 'node');
  if (!existsSync(binary)) throw new Error(`${binary} is missing: run npm install`);
  return realpathSync(binary);
}

export interface LinuxProcess {
  pid: number;
  /** The executable, from /proc/<pid>/exe. */
  exe: string;
  argv: string[];
  /** Its threads' names (/proc/<pid>/task/<tid>/comm). */
  threads: string[];
}

/** `root` and every process under it (through parent IDs, across process groups), from /proc: Linux only. */
export function processTree(root: number): LinuxProcess[] {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    try {
      // The fields after the command name, which may itself hold spaces and parentheses.
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), pid]);
    } catch {
      /* exited meanwhile */
    }
  }
  const tree: LinuxProcess[] = [];
  const visit = (pid: number) => {
    try {
      const exe = readlinkSync(`/proc/${pid}/exe`);
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      const threads = readdirSync(`/proc/${pid}/task`).map((tid) =>
        readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim(),
      );
      tree.push({ pid, exe, argv, threads });
    } catch {
      return;
    }
    for (const child of parents.get(pid) ?? []) visit(child);
  };
  visit(root);
  return tree;
}
