/**
 * `npm run bench [-- [--smoke] <suite>…]`: performance figures, each measured against its baseline in
 * the same run. Suites: see ./suites.ts. Each suite runs in a process of its own: suites start their
 * own emulators, and modules that hold AWS clients must not outlive the stack they pointed at.
 * `--smoke` (or BENCH_SIZE=smoke) runs every suite at a size of seconds, as `npm test` does.
 */
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { SUITE_NAMES, SUITES, type SuiteName } from './suites';

const CHILD_FLAG = '--suite-process';
const args = process.argv.slice(2);
// Before any suite module loads, and inherited by the suites' processes.
if (args.includes('--smoke')) process.env.BENCH_SIZE = 'smoke';
const wanted = args.filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((name) => !(name in SUITES));
if (unknown.length) {
  console.error(`unknown suite(s): ${unknown.join(', ')}; available: ${SUITE_NAMES.join(', ')}`);
  process.exit(2);
}

if (args.includes(CHILD_FLAG)) {
  await SUITES[wanted[0] as SuiteName]();
  process.exit(0);
}

const smoke =
  process.env.BENCH_SIZE === 'smoke' ? ' — SMOKE size: proves the suites run, the figures mean nothing' : '';
console.log(
  `# Switchboard benchmarks — ${new Date().toISOString()} — node ${process.version}, ${cpus().length} cores${smoke}`,
);
let failed = 0;
for (const name of wanted.length ? wanted : SUITE_NAMES) {
  const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!, name, CHILD_FLAG], {
    stdio: 'inherit',
  });
  if (child.status !== 0) {
    console.error(`suite ${name} failed (exit ${child.status ?? child.signal})`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
