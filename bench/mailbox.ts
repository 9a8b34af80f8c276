import { performance } from 'node:perf_hooks';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { buildEvent, lambdaContext } from '../scripts/local-stack/api-gateway-event';
import { fmt, median, rng, scaled, table } from './lib';
import { startStack } from '../scripts/local-stack/index';

/**
 * Issue 3 benchmark: p50 of GET /v3/grants/{id}/messages, unfiltered and with each index-backed
 * filter, in a mailbox of 1,000 and one of 100,000 messages, and the ratio 100k ÷ 1k for each.
 * No filter may scan the mailbox, so every ratio should stay near 1 (target ≤ 1.5).
 *
 * The mailboxes are bulk-loaded with the production record shape, posting derivation
 * (shared/agent/postings.ts), key builders and thread aggregation; what is measured is the real
 * messages handler invoked in-process with API Gateway events against DynamoDB Local.
 */
const TARGET = 1.5;
const SIZES = [scaled(1_000, 20), Number(process.env.BENCH_LARGE_MAILBOX ?? scaled(100_000, 60))];
const ITERATIONS = scaled(40, 3);
const WARM_UP = scaled(5, 1);
/** 1000 → 1k, as the table heads name the sizes. */
const sizeLabel = (n: number) => (n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));


const VOCABULARY = Array.from({ length: 2000 }, (_, i) => `w${i.toString(36)}x`);
const zipf = (random: () => number) => VOCABULARY[Math.min(VOCABULARY.length - 1, Math.floor(Math.exp(random() * Math.log(VOCABULARY.length))) - 1)]!;
const SENDERS = Array.from({ length: 200 }, (_, i) => `sender${i}@example.net`);
/**
 * Senders are skewed like a real inbox, and the two the queries filter on (`from=`, `any_email=`)
 * each send about 8 % of the mail, so both mailboxes fill a page of 50: the ratio then compares the
 * same work at two sizes rather than a short page at 1k with a full one at 100k.
 */
const pickSender = (random: () => number) => {
  const r = random();
  return r < 0.08 ? SENDERS[0]! : r < 0.16 ? SENDERS[1]! : SENDERS[2 + Math.floor(random() * random() * (SENDERS.length - 2))]!;
};

export async function runMailboxBench(): Promise<void> {
  console.log('\n## Agent Account mailboxes (issue 3)\n');
  const stack = await startStack(`benchmail${process.pid}`);
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });
  try {
    const [{ createApplication }, grantsService, { dynamo, TABLE_NAME }, { batchWrite, putRequests }, keys, postings, threadRefresh, ids, text] = await Promise.all([
      import('#shared/applications/service'),
      import('#shared/grants/create'),
      import('#shared/aws/dynamodb'),
      import('#shared/db/batch'),
      import('#shared/db/keys'),
      import('#shared/agent/postings'),
      import('#shared/agent/thread-refresh'),
      import('#shared/ids'),
      import('#shared/agent/text'),
    ]);
    type MessageRecord = import('#shared/agent/types').MessageRecord;
    const app = await createApplication({ name: 'bench' });
    const appContext = { applicationId: app.application_id, credential: 'api_key' as const };

    /** Loads `count` messages into a new Agent Account; returns what the queries need. */
    const load = async (count: number) => {
      const grant = await grantsService.createCustomGrant(appContext, { provider: 'agent', settings: { email_address: `bench-${count}-${process.pid}@agents.test` } }, { ip: '127.0.0.1', userAgent: 'bench' });
      const random = rng(42);
      const start = performance.now();
      const counters = new Map<string, { total: number; unread: number }>();
      let threadIds: string[] = [];
      let batch: Record<string, unknown>[] = [];
      let pendingThread: MessageRecord[] = [];
      let written = 0;
      const flushThread = () => {
        if (!pendingThread.length) return;
        const newestFirst = [...pendingThread].reverse();
        const thread = threadRefresh.aggregateThread(grant.id, pendingThread[0]!.thread_id, newestFirst, [], 1);
        batch.push({ ...keys.threadKey(grant.id, thread.id), ...thread });
        batch.push({ ...keys.threadListKey(grant.id, thread.latest_message_id), thread_id: thread.id });
        pendingThread = [];
      };
      let threadId = ids.newId('thread');
      const firstId = ids.newId('message');
      for (let i = 0; i < count; i++) {
        if (i % 4 === 0) {
          flushThread();
          threadId = ids.newId('thread');
          threadIds.push(threadId);
        }
        const subject = `${zipf(random)} ${zipf(random)} ${zipf(random)} report ${i % 97}`;
        const body = `<p>${Array.from({ length: 8 }, () => zipf(random)).join(' ')}</p>`;
        const folder = random() < 0.8 ? 'inbox' : random() < 0.5 ? 'archive' : 'sent';
        const unread = folder !== 'sent' && random() < 0.3;
        const now = Math.floor(Date.now() / 1000);
        const message: MessageRecord = {
          id: ids.newId('message'),
          grant_id: grant.id,
          thread_id: threadId as MessageRecord['thread_id'],
          subject,
          from: [{ email: pickSender(random), name: 'Sender' }],
          to: [{ email: grant.email }],
          cc: [],
          bcc: [],
          reply_to: [],
          date: now,
          unread,
          starred: false,
          folders: [folder],
          snippet: text.snippetOf(text.htmlToText(body)),
          body,
          is_plaintext: false,
          attachments: [],
          metadata: {},
          references: [],
          created_at: now,
          updated_at: now,
          version: 1,
        };
        const c = counters.get(folder) ?? { total: 0, unread: 0 };
        counters.set(folder, { total: c.total + 1, unread: c.unread + (unread ? 1 : 0) });
        batch.push({ ...keys.messageKey(grant.id, message.id), ...message });
        for (const kind of [...postings.mutablePostings(message), ...postings.immutablePostings(message, text.htmlToText(body))]) {
          batch.push({ ...keys.postingKey(grant.id, kind, message.id) });
        }
        pendingThread.push(message);
        if (batch.length >= 5000) {
          written += batch.length;
          const half = Math.ceil(batch.length / 2);
          await Promise.all([batchWrite(putRequests(batch.slice(0, half))), batchWrite(putRequests(batch.slice(half)))]);
          batch = [];
          if (count >= 10_000 && i % 10_000 < 160) process.stdout.write(`  loaded ${i + 1} / ${count} messages (${written} items)\r`);
        }
      }
      flushThread();
      written += batch.length;
      await batchWrite(putRequests(batch));
      for (const [folder, c] of counters) {
        await dynamo.send(
          new UpdateCommand({
            TableName: TABLE_NAME,
            Key: keys.folderKey(grant.id, folder),
            UpdateExpression: 'ADD total_count :t, unread_count :u',
            ExpressionAttributeValues: { ':t': c.total, ':u': c.unread },
          }),
        );
      }
      const seconds = (performance.now() - start) / 1000;
      console.log(`  ${count.toLocaleString('en')} messages loaded: ${written.toLocaleString('en')} items in ${seconds.toFixed(0)} s`.padEnd(70));
      return { grant, threadId: threadIds[Math.floor(threadIds.length / 2)]!, receivedAfter: Math.floor(ids.idTime(firstId) / 1000) - 1 };
    };

    const { handler } = await import('#functions/messages/handler');
    const queries = (m: { grant: { email: string }; threadId: string; receivedAfter: number }): [string, string][] => [
      ['limit=50 (no filter)', 'limit=50'],
      ['subject=', `limit=50&subject=report`],
      ['from=', `limit=50&from=${encodeURIComponent(SENDERS[0]!)}`],
      ['any_email=', `limit=50&any_email=${encodeURIComponent(SENDERS[1]!)}`],
      ['unread=true', 'limit=50&unread=true'],
      ['in=', 'limit=50&in=inbox'],
      ['thread_id=', `limit=50&thread_id=${m.threadId}`],
      ['received_after=', `limit=50&received_after=${m.receivedAfter}`],
      ['search_query_native=', `limit=50&search_query_native=${VOCABULARY[3]}`],
    ];
    const measure = async (grantId: string, query: string) => {
      const call = async () => {
        const event = buildEvent(
          { routeKey: 'GET /v3/grants/{grant_id}/messages', params: { grant_id: grantId } },
          { method: 'GET', url: `/v3/grants/${grantId}/messages?${query}`, headers: { authorization: `Bearer ${app.api_key}` }, body: Buffer.alloc(0), sourceIp: '127.0.0.1' },
        );
        const t = performance.now();
        const result = (await handler(event, lambdaContext('messages'))) as APIGatewayProxyStructuredResultV2;
        const elapsed = performance.now() - t;
        if (result.statusCode !== 200) throw new Error(`${query}: ${result.statusCode} ${result.body}`);
        return { elapsed, count: (JSON.parse(result.body!) as { data: unknown[] }).data.length };
      };
      for (let i = 0; i < WARM_UP; i++) await call();
      const samples: number[] = [];
      let count = 0;
      for (let i = 0; i < ITERATIONS; i++) {
        const r = await call();
        samples.push(r.elapsed);
        count = r.count;
      }
      return { p50: median(samples), count };
    };

    const mailboxes = [];
    for (const size of SIZES) mailboxes.push({ size, ...(await load(size)) });
    const small = mailboxes[0]!;
    const large = mailboxes[1]!;
    const [s, l] = [sizeLabel(small.size), sizeLabel(large.size)];
    const rows: (string | number)[][] = [['GET …/messages', 'results', `p50 @ ${s}`, `p50 @ ${l}`, `ratio ${l} ÷ ${s}`, `target ≤ ${TARGET}`]];
    const smallQueries = queries(small);
    const largeQueries = queries(large);
    for (let q = 0; q < smallQueries.length; q++) {
      // Interleave the two mailboxes so machine noise hits both alike.
      const a = await measure(small.grant.id, smallQueries[q]![1]);
      const b = await measure(large.grant.id, largeQueries[q]![1]);
      const ratio = b.p50 / a.p50;
      rows.push([smallQueries[q]![0], `${a.count} / ${b.count}`, fmt(a.p50), fmt(b.p50), ratio.toFixed(2), ratio <= TARGET ? 'met' : 'MISSED']);
    }
    console.log(`\n${table(rows)}\n(p50 of ${ITERATIONS} in-process requests each, after ${WARM_UP} warm-up request${WARM_UP === 1 ? '' : 's'})`);
  } finally {
    await stack.stop();
  }
}
