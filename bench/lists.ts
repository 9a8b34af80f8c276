import { performance } from 'node:perf_hooks';
import { startStack } from '../scripts/local-stack/index';
import { percentile, scaled, table } from './lib';

/**
 * Issue 12 benchmark: list membership is a key lookup, so deciding a message costs the same whether
 * the lists its rules reference hold 10 values or 100,000. On the local stack, in process:
 * - the time to add 100,000 values to a list through the service, 1000 values per request;
 * - the p50 of deciding an inbound message (governance version read, cached rules, one batch read of
 *   the candidate values) against 10 rules whose lists hold 10 values, then 100,000, and the ratio
 *   (target ≤ 1.2), and that p50 itself (target ≤ 2 ms).
 */
const BIG = Number(process.env.BENCH_LIST_VALUES ?? scaled(100_000, 20));
const RULES = scaled(10, 2);
const DECISIONS = scaled(500, 10);
const WARM_UP = scaled(50, 2);

const fmtMs = (ms: number) => `${ms.toFixed(2)} ms`;

export async function runListsBench(): Promise<void> {
  console.log(`\n## Lists: ${BIG} values, and deciding a message against ${RULES} rules (issue 12)\n`);
  const stack = await startStack(`benchlists${process.pid}`);
  Object.assign(process.env, stack.env, { LOG_LEVEL: 'warn' });
  try {
    const [{ createApplication }, lists, rules, workspaces, { governanceOf, partyOf }] = await Promise.all([
      import('#shared/applications/service'),
      import('#shared/governance/lists'),
      import('#shared/governance/rules'),
      import('#shared/governance/workspaces'),
      import('#shared/governance/decide'),
    ]);

    /** An application whose default workspace has RULES inbound rules, each on a domain list of `size` values. */
    const setUp = async (size: number) => {
      const app = await createApplication({ name: `bench lists ${size}` });
      const appId = app.application_id as never;
      const ruleIds: string[] = [];
      let addMs = 0;
      for (let r = 0; r < RULES; r++) {
        const list = await lists.createList(appId, { name: `l${r}`, type: 'domain' });
        const perList = r === 0 ? size : Math.min(size, 10);
        const started = performance.now();
        for (let i = 0; i < perList; i += 1000) {
          await lists.addItems(appId, list.id, {
            items: Array.from({ length: Math.min(1000, perList - i) }, (_, j) => `d${i + j}.r${r}.example`),
          });
        }
        if (r === 0) addMs = performance.now() - started;
        const rule = await rules.createRule(appId, {
          name: `r${r}`,
          actions: [{ type: 'mark_as_spam' }],
          match: { conditions: [{ field: 'from.domain', operator: 'in_list', value: [list.id] }] },
        });
        ruleIds.push(rule.id);
      }
      const workspace = await workspaces.defaultWorkspace(appId);
      await workspaces.updateWorkspace(appId, workspace.id, { rule_ids: ruleIds });
      return { appId, addMs };
    };

    const measure = async (appId: string) => {
      const grant = { id: 'grant_01jd6abcdefghjkmnpqrstvwxy' as never, application_id: appId };
      const input = (i: number) => ({ from: partyOf(`sender@d${i % 20}.r0.example`)!, recipients: [] });
      const decide = async (i: number) => (await governanceOf(grant)).decide('inbound', input(i));
      for (let i = 0; i < WARM_UP; i++) await decide(i);
      const samples: number[] = [];
      let matched = 0;
      for (let i = 0; i < DECISIONS; i++) {
        const started = performance.now();
        const decision = await decide(i);
        samples.push(performance.now() - started);
        if (decision?.matched.length) matched++;
      }
      return { p50: percentile(samples, 50), p99: percentile(samples, 99), matched };
    };

    // The floor: the two reads a decision makes (GetItem of the version, BatchGetItem of one
    // candidate value), as bare SDK calls against the same DynamoDB.
    const floor = async (appId: string, listKey: { pk: string; sk: string }) => {
      const { dynamo, TABLE_NAME } = await import('#shared/aws/dynamodb');
      const { GetCommand, BatchGetCommand } = await import('@aws-sdk/lib-dynamodb');
      const samples: number[] = [];
      for (let i = 0; i < DECISIONS + WARM_UP; i++) {
        const started = performance.now();
        await dynamo.send(
          new GetCommand({
            TableName: TABLE_NAME,
            Key: { pk: `app#${appId}`, sk: 'governance' },
            ConsistentRead: true,
          }),
        );
        await dynamo.send(new BatchGetCommand({ RequestItems: { [TABLE_NAME]: { Keys: [listKey] } } }));
        if (i >= WARM_UP) samples.push(performance.now() - started);
      }
      return percentile(samples, 50);
    };

    const small = await setUp(10);
    const big = await setUp(BIG);
    const smallRun = await measure(small.appId);
    const bigRun = await measure(big.appId);
    console.log(
      `added ${BIG} values in ${(big.addMs / 1000).toFixed(1)} s (${Math.round(BIG / (big.addMs / 1000))} values/s, 1000 per request)\n`,
    );
    console.log(
      table([
        ['lists of', 'decision p50', 'p99', 'messages matched'],
        ['10 values', fmtMs(smallRun.p50), fmtMs(smallRun.p99), `${smallRun.matched}/${DECISIONS}`],
        [`${BIG} values`, fmtMs(bigRun.p50), fmtMs(bigRun.p99), `${bigRun.matched}/${DECISIONS}`],
      ]),
    );
    const ratio = bigRun.p50 / smallRun.p50;
    const floorP50 = await floor(big.appId, { pk: 'list#lst_01jd6abcdefghjkmnpqrstvwxy#items', sk: 'd1.r0.example' });
    console.log(
      `\nratio p50(${BIG}) / p50(10): ${ratio.toFixed(2)} (target ≤ 1.2: ${ratio <= 1.2 ? 'met' : 'NOT met'}); p50 ${fmtMs(bigRun.p50)} (target ≤ 2 ms: ${bigRun.p50 <= 2 ? 'met' : 'NOT met'})`,
    );
    console.log(
      `floor, same run: the same two reads as bare SDK calls (GetItem + BatchGetItem) p50 ${fmtMs(floorP50)}; decision ÷ floor ${(bigRun.p50 / floorP50).toFixed(2)}`,
    );
  } finally {
    await stack.stop();
  }
}
