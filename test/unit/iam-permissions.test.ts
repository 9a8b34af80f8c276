import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build, type Plugin } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { ROOT, loadServerlessConfig } from '../../scripts/local-stack/serverless-config';

/**
 * The emulators do not check IAM, so a missing permission would only show on AWS. This test bundles
 * each function as `serverless package` does (serverless.yml's custom.esbuild: its format, target,
 * main fields, aliases and plugins; tree-shaken but not minified, so names and esbuild's
 * `// <path>` module markers survive), finds every SDK command that the project's own code left in
 * the bundle constructs (`new GetCommand(`, `new GetCommand2(` after esbuild renames), and checks
 * the function's role allows each of them, and nothing more (least privilege).
 */
const config = loadServerlessConfig();
const resources = config.resources.Resources;

/** IAM actions each imported SDK command needs. */
const ACTIONS: Record<string, string[]> = {
  GetCommand: ['dynamodb:GetItem'],
  PutCommand: ['dynamodb:PutItem'],
  UpdateCommand: ['dynamodb:UpdateItem'],
  DeleteCommand: ['dynamodb:DeleteItem'],
  QueryCommand: ['dynamodb:Query'],
  ScanCommand: ['dynamodb:Scan'],
  BatchGetCommand: ['dynamodb:BatchGetItem'],
  BatchWriteCommand: ['dynamodb:BatchWriteItem'],
  // Authorised per item (Put/Update/Delete/ConditionCheck): the items are data, not imports.
  TransactWriteCommand: [],
  TransactWriteItemsCommand: [],
  SendMessageCommand: ['sqs:SendMessage'],
  SendMessageBatchCommand: ['sqs:SendMessage'],
  GetObjectCommand: ['s3:GetObject'],
  HeadObjectCommand: ['s3:GetObject'],
  PutObjectCommand: ['s3:PutObject'],
  // A copy inside the bucket reads the source and writes the destination.
  CopyObjectCommand: ['s3:GetObject', 's3:PutObject'],
  DeleteObjectCommand: ['s3:DeleteObject'],
  DeleteObjectsCommand: ['s3:DeleteObject'],
  ListObjectsV2Command: ['s3:ListBucket'],
  SendEmailCommand: ['ses:SendEmail'],
  GetSecretValueCommand: ['secretsmanager:GetSecretValue'],
  // Creating a schedule hands EventBridge Scheduler the role it assumes to reach the target.
  CreateScheduleCommand: ['scheduler:CreateSchedule', 'iam:PassRole'],
  DeleteScheduleCommand: ['scheduler:DeleteSchedule'],
};
const CONSTRUCTED = /\bnew ([A-Za-z0-9]+?Command)\d*\(/g;
const MODULE_MARKER = /^\/\/ (\S+)$/m;
const esbuildOptions = config.custom.esbuild as Record<string, unknown>;
// serverless-esbuild loads `plugins` as a CommonJS module exporting the plugin list.
const plugins = createRequire(import.meta.url)(join(ROOT, esbuildOptions.plugins as string)) as Plugin[];

async function commandsOf(handler: string): Promise<string[]> {
  const options = esbuildOptions;
  const alias = Object.fromEntries(Object.entries((options.alias ?? {}) as Record<string, string>).map(([k, v]) => [k, join(ROOT, v)]));
  const extension = (options.outputFileExtension as string | undefined) ?? '.js';
  const result = await build({
    entryPoints: [join(ROOT, `${handler.slice(0, handler.lastIndexOf('.'))}.ts`)],
    bundle: true,
    platform: options.platform as 'node',
    target: options.target as string,
    format: options.format as 'cjs',
    mainFields: options.mainFields as string[],
    alias,
    plugins,
    write: false,
    outdir: '/tmp/iam-check',
    outExtension: { '.js': extension },
    logLevel: 'error',
  });
  const outputs = result.outputFiles.filter((f) => f.path.endsWith(extension));
  expect(outputs, `one ${extension} bundle for ${handler}`).toHaveLength(1);
  const code = outputs[0]!.text;
  // split() with a capture group alternates: [prelude, path, code, path, code, …]
  const parts = code.split(MODULE_MARKER);
  // The project's own modules are marked (`// shared/…`, `// functions/…`): without markers, nothing would be checked.
  expect(parts.filter((part, i) => i % 2 === 1 && !part.includes('node_modules')).length, `module markers in the bundle of ${handler}`).toBeGreaterThan(0);
  const commands = new Set<string>();
  for (let i = 1; i < parts.length; i += 2) {
    if (parts[i]!.includes('node_modules')) continue;
    for (const [, name] of parts[i + 1]!.matchAll(CONSTRUCTED)) commands.add(name!);
  }
  return [...commands].sort();
}

function allowedActions(role: string): Set<string> {
  const policies = resources[role]!.Properties!.Policies as { PolicyDocument: { Statement: { Action: string | string[] }[] } }[];
  return new Set(policies.flatMap((p) => p.PolicyDocument.Statement.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]))));
}

/** Actions a role may hold beyond the commands it constructs. */
function grantedWithout(fn: { events?: Record<string, unknown>[] }, commands: string[]): Set<string> {
  const extra = new Set(['logs:CreateLogStream', 'logs:PutLogEvents']);
  if (fn.events?.some((e) => 'sqs' in e)) for (const a of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility', 'sqs:GetQueueAttributes']) extra.add(a);
  // Lambda delivers failed asynchronous events to an SQS on-failure destination with the function's role.
  if ((fn as { destinations?: { onFailure?: { type?: string } } }).destinations?.onFailure?.type === 'sqs') extra.add('sqs:SendMessage');
  // A DynamoDB stream event source mapping reads the stream with the function's role.
  if (fn.events?.some((e) => 'stream' in e)) for (const a of ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator', 'dynamodb:ListStreams']) extra.add(a);
  // A transaction's items are Put/Update/Delete/ConditionCheck, chosen at run time.
  if (commands.includes('TransactWriteCommand') || commands.includes('TransactWriteItemsCommand')) {
    for (const a of ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:ConditionCheckItem']) extra.add(a);
  }
  // SESv2 SendEmail with raw content is authorised as SendRawEmail too.
  if (commands.includes('SendEmailCommand')) extra.add('ses:SendRawEmail');
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
    expect(await commandsOf(config.functions['webhook-delivery']!.handler)).toEqual(expect.arrayContaining(['BatchGetCommand', 'BatchWriteCommand', 'SendMessageBatchCommand']));
    expect(await commandsOf(config.functions.fallback!.handler)).toEqual([]);
    // The webhook key is read from Secrets Manager by the two functions that use webhook secrets.
    for (const name of ['webhooks', 'webhook-delivery']) expect(await commandsOf(config.functions[name]!.handler), name).toContain('GetSecretValueCommand');
  });
});
