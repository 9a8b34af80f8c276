import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { SUITE_NAMES, type SuiteName } from '../../bench/suites';
import { ROOT } from '../../scripts/local-stack/serverless-config';
import { cleanEnv, groupAlive } from '../support/npm-start';

/**
 * `npm run bench` must not rot: each suite runs once at smoke size (seconds, not minutes) through
 * the same code, as a developer runs it (`npm run bench -- --smoke <suite>`: its own emulators, an
 * environment without this test run's stack). What is checked is that it finishes and prints its
 * figures; never how fast: the figures of a smoke run mean nothing.
 *
 * The suites are split over three test files so that most of them run beside the other test files
 * (vitest.config.ts): bench-smoke.test.ts runs alone the two that cannot share the machine's
 * folders or ports (foundation runs `serverless package`, whose work folder in the repository other
 * packaging tests use; start runs `npm start`, which binds ports it picked seconds earlier).
 */
export const SMOKE_FILES = {
  alone: ['foundation', 'start'],
  mail: ['mailbox', 'send', 'lists', 'webhooks', 'imap'],
  calendar: ['scheduled', 'calendar', 'caldav', 'google', 'microsoft', 'availability', 'scheduler'],
} as const satisfies Record<string, readonly SuiteName[]>;

export const FIGURES: Record<SuiteName, RegExp[]> = {
  foundation: [
    /^## Foundation/m,
    /^jobs +[\d.]+ KB/m,
    /^function +bundle .* lazy chunks KB/m,
    /^lazy chunks loaded by module init: none$/m,
    /^bare `node -e 0`: [\d.]+ ms/m,
    /^jobs +[\d.]+ ms +-?[\d.]+ ms/m,
    /^ratio handler \/ DynamoDB p50: [\d.]+/m,
  ],
  mailbox: [
    /^## Agent Account mailboxes/m,
    /^limit=50 \(no filter\) +\d+ \/ \d+ +[\d.]+ ms +[\d.]+ ms +[\d.]+/m,
    /^search_query_native= /m,
  ],
  send: [
    /^## Send to \d+ local Agent Accounts/m,
    /^answer, to 1 local Agent Account +\d+ ms/m,
    /^answer → all \d+ copies stored +\d+ ms/m,
    /^answer \d+ ÷ 1 recipient: [\d.]+/m,
    /^inbox counts: /m,
    /^## A [\d.]+ MB attachment sent through an upload/m,
    /^target: the send function never holds the whole file twice .*: (met|NOT met)/m,
  ],
  scheduled: [
    /^## Scheduled send/m,
    /^ours: send_at → arrival at the recipient +\d+\/\d+ +-?[\d.]+ s/m,
    /^platform alone: at\(due\) → firing received +\d+\/\d+/m,
  ],
  lists: [
    /^## Lists/m,
    /^added \d+ values in [\d.]+ s/m,
    /^ratio p50\(\d+\) \/ p50\(10\): [\d.]+/m,
    /^floor, same run: .* p50 [\d.]+ ms/m,
  ],
  webhooks: [
    /^## Webhooks/m,
    /^end-to-end: publish → receipt, \d+ notifications +\d+ deliveries\/s/m,
    /^durable-steps floor: .* \d+ deliveries\/s/m,
    /^commit → webhook receipt .* p50 \d+ ms/m,
  ],
  imap: [
    /^## IMAP sync/m,
    /^first sync of \d+ messages: ours.* +\d+ messages\/s/m,
    /^ +its messages-stored jobs drained +[\d.]+ s/m,
    /^floor: bare imapflow FETCH.* +\d+ messages\/s/m,
    /^ +ours ÷ floor +[\d.]+/m,
    /^durable floor: .* +\d+ messages\/s/m,
    /^ +ours ÷ durable floor +[\d.]+/m,
    /^APPEND → message.created receipt, \d+ APPENDs .* p50 [\d.]+ s, p99 [\d.]+ s, max [\d.]+ s/m,
    /^ +polling interval in force +\d+ s/m,
    /^DynamoDB items written per synced message: sync, jobs +[\d.]+, [\d.]+/m,
  ],
  calendar: [/^## Calendar/m, /^seeded \d+ events in [\d.]+ s/m, /^ratio p50\(\d+\) \/ p50\(\d+\): [\d.]+/m],
  caldav: [
    /^## CalDAV/m,
    /^ours: calendar list, sync-collection, multiget, \d+ events stored +[\d.]+ s +\d+/m,
    /^floor: .* +[\d.]+ s +\d+/m,
    /^ours ÷ floor \(events\/s\): [\d.]+/m,
    /^ratio p50\(CalDAV\) \/ p50\(Agent Account\): [\d.]+/m,
  ],
  google: [
    /^## Provider A \(google\)/m,
    /^GET messages\?limit=50 +\d+ \(\d+\) +\d+ +[\d.]+ ms \/ [\d.]+ ms +[\d.]+ ms \/ [\d.]+ ms +[\d.]+/m,
    /^ +answer ÷ bare provider calls, in process: [\d.]+/m,
    /^availability ÷ bare free\/busy calls, in process: [\d.]+/m,
    /^deliver → message\.created at the webhook receiver, push on +p50 \d+ ms, p95 \d+ ms, max \d+ ms/m,
    /^change → webhook p95 with push: \d+ ms/m,
  ],
  microsoft: [
    /^## Provider B \(microsoft\)/m,
    /^GET messages\?limit=50 +\d+ \(\d+\) +\d+ +[\d.]+ ms \/ [\d.]+ ms +[\d.]+ ms \/ [\d.]+ ms +[\d.]+/m,
    /^ +answer ÷ bare provider calls, in process: [\d.]+/m,
    /^availability ÷ bare free\/busy calls, in process: [\d.]+/m,
    /^deliver → message\.created at the webhook receiver, push on +p50 \d+ ms, p95 \d+ ms, max \d+ ms/m,
    /^change → webhook p95 with push: \d+ ms/m,
  ],
  availability: [/^## Availability/m, /^5 × \d+ collective +[\d.]+ ms/m, /^growth 5 × \d+ \/ 1 × \d+: engine ×[\d.]+/m],
  scheduler: [
    /^## Scheduler/m,
    /^availability p50 \(.*\) +[\d.]+ ms/m,
    /^race: bookings \/ 409 +\d+ \/ \d+/m,
    /^availability p50: [\d.]+ ms/m,
  ],
  start: [
    /^## npm start/m,
    /^first start \(empty cache, as a fresh clone\): to its line "\[switchboard\] ready in" +[\d.]+ s/m,
    /^to its line "\[switchboard\] ready in" +[\d.]+ s/m,
    /^to the first 2xx of GET \/v3\/grants .* [\d.]+ s/m,
    /^baseline: the emulators alone, startLocalStack\(\) to its return .* [\d.]+ s/m,
    /^baseline: `node -e 0` +[\d.]+ ms/m,
  ],
};

/** A developer's terminal: nothing of this test run's stack, nor the settings test workers get. */
function terminalEnv(): NodeJS.ProcessEnv {
  const env = cleanEnv({});
  for (const key of ['LOG_LEVEL', 'API_KEY_CACHE_SECONDS', 'SCHEDULED_SEND_MIN_LEAD_SECONDS', 'BENCH_SIZE'])
    delete env[key];
  return env;
}

const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.pid && groupAlive(child.pid)) process.kill(-child.pid, 'SIGKILL');
});

function runSuite(name: SuiteName): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('npm', ['run', '--silent', 'bench', '--', '--smoke', name], {
      cwd: ROOT,
      detached: true,
      env: terminalEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** The smoke runs of one file's suites; every suite of `npm run bench` is in exactly one file. */
export function smokeSuites(file: keyof typeof SMOKE_FILES): void {
  describe(`npm run bench -- --smoke (${file})`, () => {
    it('every suite of npm run bench is smoke-run by exactly one file', () => {
      const listed = Object.values(SMOKE_FILES).flat();
      expect([...listed].sort()).toEqual([...SUITE_NAMES].sort());
    });

    it.each([...SMOKE_FILES[file]])(
      '%s runs to the end and prints its figures',
      async (name) => {
        const { code, output } = await runSuite(name);
        expect(code, output.slice(-4000)).toBe(0);
        for (const figure of FIGURES[name]) expect(output, `${figure} in:\n${output.slice(-4000)}`).toMatch(figure);
      },
      240_000,
    );
  });
}
