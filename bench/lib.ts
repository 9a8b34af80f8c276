import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import JSZip from 'jszip';
import { ROOT } from '../scripts/local-stack/serverless-config';

const require = createRequire(import.meta.url);

/** A small deterministic generator (mulberry32), so every run seeds the same data. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function percentile(samples: number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  if (!sorted.length) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export const median = (samples: number[]) => percentile(samples, 50);

export function fmt(ms: number, digits = 2): string {
  return `${ms.toFixed(digits)} ms`;
}

export function table(rows: (string | number)[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
  return rows.map((r) => r.map((c, i) => String(c).padEnd(widths[i]!)).join('  ')).join('\n');
}

export interface PackagedFunction {
  name: string;
  /** Path of the unzipped handler bundle. */
  bundle: string;
  bytes: number;
}

/** Runs `serverless package` (the deployment artifacts, built offline) and unzips each function. */
export async function packageFunctions(): Promise<{ dir: string; functions: PackagedFunction[]; cleanup: () => void }> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  const serverless = join(dirname(require.resolve('osls/package.json')), 'bin', 'serverless.js');
  execFileSync(process.execPath, [serverless, 'package', '--stage', 'bench', '--package', join(dir, 'artifacts')], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  });
  const functions: PackagedFunction[] = [];
  for (const zip of readdirSync(join(dir, 'artifacts')).filter((f) => f.endsWith('.zip'))) {
    const name = zip.replace(/\.zip$/, '');
    const archive = await JSZip.loadAsync(readFileSync(join(dir, 'artifacts', zip)));
    const entry = Object.values(archive.files).find((f) => !f.dir && /\.[cm]?js$/.test(f.name));
    if (!entry) throw new Error(`${zip} holds no bundle`);
    const bundle = join(dir, 'unzipped', name, entry.name);
    mkdirSync(join(bundle, '..'), { recursive: true });
    const code = await entry.async('nodebuffer');
    writeFileSync(bundle, code);
    functions.push({ name, bundle, bytes: code.length });
  }
  return { dir, functions: functions.sort((a, b) => a.name.localeCompare(b.name)), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
