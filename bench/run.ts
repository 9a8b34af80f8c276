/**
 * `npm run bench [-- <suite>…]`: performance figures, each measured against its baseline in the same
 * run. Suites: foundation, mailbox.
 */
import { runFoundationBench } from './foundation';
import { runMailboxBench } from './mailbox';

const SUITES: Record<string, () => Promise<void>> = {
  foundation: runFoundationBench,
  mailbox: runMailboxBench,
};

const wanted = process.argv.slice(2).filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((name) => !SUITES[name]);
if (unknown.length) {
  console.error(`unknown suite(s): ${unknown.join(', ')}; available: ${Object.keys(SUITES).join(', ')}`);
  process.exit(2);
}
console.log(`# Switchboard benchmarks — ${new Date().toISOString()} — node ${process.version}, ${(await import('node:os')).cpus().length} cores`);
for (const name of wanted.length ? wanted : Object.keys(SUITES)) await SUITES[name]!();
process.exit(0);
