import { describe, expect, it } from 'vitest';
import { ACTIONS, TRANSACT_ACTIONS, commandsOf as scanCommands } from '../../scripts/infra/sdk-commands';
import { ROOT, loadServerlessConfig } from '../../scripts/local-stack/serverless-config';

/**
 * The emulators do not check IAM, so a missing permission would only show on AWS. This test bundles
 * each function as `serverless package` does and finds every SDK command the project's own code
 * constructs (scripts/infra/sdk-commands.ts, the scan the generator of serverless.yml grants from),
 * and checks the function's role in serverless.yml allows each of them, and nothing more (least
 * privilege): a serverless.yml not regenerated after a code change fails here.
 */
const config = loadServerlessConfig();
const resources = config.resources.Resources;

const esbuildOptions = config.custom.esbuild as Record<string, unknown>;
const commandsOf = (handler: string) => scanCommands(ROOT, esbuildOptions, handler);

function allowedActions(role: string): Set<string> {
  const policies = resources[role]!.Properties!.Policies as {
    PolicyDocument: { Statement: { Action: string | string[] }[] };
  }[];
  return new Set(
    policies.flatMap((p) =>
      p.PolicyDocument.Statement.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])),
    ),
  );
}

/** Actions a role may hold beyond the commands it constructs. */
function grantedWithout(fn: { events?: Record<string, unknown>[] }, commands: string[]): Set<string> {
  // Its logs, and X-Ray's segments when the deployment turns tracing on (TRACING=true).
  const extra = new Set([
    'logs:CreateLogStream',
    'logs:PutLogEvents',
    'xray:PutTraceSegments',
    'xray:PutTelemetryRecords',
  ]);
  if (fn.events?.some((e) => 'sqs' in e))
    for (const a of [
      'sqs:ReceiveMessage',
      'sqs:DeleteMessage',
      'sqs:ChangeMessageVisibility',
      'sqs:GetQueueAttributes',
    ])
      extra.add(a);
  // Lambda delivers failed asynchronous events to an SQS on-failure destination with the function's role.
  if ((fn as { destinations?: { onFailure?: { type?: string } } }).destinations?.onFailure?.type === 'sqs')
    extra.add('sqs:SendMessage');
  // A DynamoDB stream event source mapping reads the stream with the function's role.
  if (fn.events?.some((e) => 'stream' in e))
    for (const a of [
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
      'dynamodb:ListStreams',
    ])
      extra.add(a);
  // A transaction's items are Put/Update/Delete/ConditionCheck, chosen at run time.
  if (commands.includes('TransactWriteCommand') || commands.includes('TransactWriteItemsCommand'))
    for (const a of TRANSACT_ACTIONS) extra.add(a);
  return extra;
}

describe('IAM roles', () => {
  for (const [name, fn] of Object.entries(config.functions)) {
    it(`${name}: its role allows every AWS call its code can make`, async () => {
      const commands = await commandsOf(fn.handler);
      const unknown = commands.filter((c) => !ACTIONS[c]);
      expect(unknown, 'commands this test does not map to IAM actions yet').toEqual([]);
      const allowed = allowedActions(fn.role!);
      const missing = [...new Set(commands.flatMap((c) => ACTIONS[c]!))].filter((action) => !allowed.has(action));
      expect(missing, `${fn.role} lacks`).toEqual([]);
      const needed = new Set([...commands.flatMap((c) => ACTIONS[c]!), ...grantedWithout(fn, commands)]);
      expect(
        [...allowed].filter((action) => !needed.has(action)),
        `${fn.role} holds unused actions`,
      ).toEqual([]);
    });
  }

  it('reads the commands a bundle constructs (so the checks above can fail)', async () => {
    expect(await commandsOf(config.functions['webhook-delivery']!.handler)).toEqual(
      expect.arrayContaining(['BatchGetCommand', 'BatchWriteCommand', 'SendMessageBatchCommand']),
    );
    expect(await commandsOf(config.functions.fallback!.handler)).toEqual([]);
    // The webhook key is read from Secrets Manager by the two functions that use webhook secrets.
    for (const name of ['webhooks', 'webhook-delivery'])
      expect(await commandsOf(config.functions[name]!.handler), name).toContain('GetSecretValueCommand');
  });
});
