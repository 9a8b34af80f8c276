/**
 * `npm run bench [-- <suite>…]`: performance figures, each measured against its baseline in the same
 * run. Suites: foundation, mailbox, webhooks.
 */
import { runFoundationBench } from './foundation';
import { runMailboxBench } from './mailbox';
import { runWebhooksBench } from './webhooks';

const SUITES: Record<string, () => Promise<void>> = {
  foundation: runFoundationBench,
  mailbox: runMailboxBench,
  webhooks: runWebhooksBench,
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
