/**
 * `npm run bench [-- <suite>…]`: performance figures, each measured against its baseline in the same
 * run. Suites: foundation, mailbox, send, scheduled, lists, webhooks, calendar, availability, scheduler. Each suite runs in a process of its own: suites start
 * their own emulators, and modules that hold AWS clients must not outlive the stack they pointed at.
 */
import { spawnSync } from 'node:child_process';
import { cpus } from 'node:os';
import { runAvailabilityBench } from './availability';
import { runCalendarBench } from './calendar';
import { runFoundationBench } from './foundation';
import { runListsBench } from './lists';
import { runMailboxBench } from './mailbox';
import { runScheduledBench } from './scheduled';
import { runSchedulerBench } from './scheduler';
import { runSendBench } from './send';
import { runWebhooksBench } from './webhooks';

const SUITES: Record<string, () => Promise<void>> = {
  foundation: runFoundationBench,
  mailbox: runMailboxBench,
  send: runSendBench,
  scheduled: runScheduledBench,
  lists: runListsBench,
  webhooks: runWebhooksBench,
  calendar: runCalendarBench,
  availability: runAvailabilityBench,
  scheduler: runSchedulerBench,
};

const CHILD_FLAG = '--suite-process';
const args = process.argv.slice(2);
const wanted = args.filter((a) => !a.startsWith('-'));
const unknown = wanted.filter((name) => !SUITES[name]);
if (unknown.length) {
  console.error(`unknown suite(s): ${unknown.join(', ')}; available: ${Object.keys(SUITES).join(', ')}`);
  process.exit(2);
}

if (args.includes(CHILD_FLAG)) {
  await SUITES[wanted[0]!]!();
  process.exit(0);
}

console.log(`# Switchboard benchmarks — ${new Date().toISOString()} — node ${process.version}, ${cpus().length} cores`);
let failed = 0;
for (const name of wanted.length ? wanted : Object.keys(SUITES)) {
  const child = spawnSync(process.execPath, [...process.execArgv, process.argv[1]!, name, CHILD_FLAG], { stdio: 'inherit' });
  if (child.status !== 0) {
    console.error(`suite ${name} failed (exit ${child.status ?? child.signal})`);
    failed++;
  }
}
process.exit(failed ? 1 : 0);
