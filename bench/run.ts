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
// The suites drive one application and one grant as fast as a process can: the request rate limiter
// runs (its writes are part of every request's cost) but must refuse nothing. A value given wins.
for (const name of [
  'RATE_LIMIT_PER_SECOND',
  'RATE_LIMIT_BURST',
  'GRANT_RATE_LIMIT_PER_SECOND',
  'GRANT_RATE_LIMIT_BURST',
])
  process.env[name] ??= '1000000';
const wanted = args.filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((name) => !(name in SUITES));
if (unknown.length) {
  console.error(`unknown suite(s): ${unknown.join(', ')}; available: ${SUITE_NAMES.join(', ')}`);
  process.exit(2);
}

if (args.includes(CHILD_FLAG)) {
  // The metrics our handlers emit in process (shared/metrics.ts: one EMF line per request, as in
  // Lambda) are written and paid for, but not shown among the figures.
  const write = process.stdout.write.bind(process.stdout) as (...a: unknown[]) => boolean;
  process.stdout.write = ((chunk: unknown, ...rest: unknown[]) =>
    typeof chunk === 'string' && chunk.startsWith('{"_aws"')
      ? true
      : write(chunk, ...rest)) as typeof process.stdout.write;
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
