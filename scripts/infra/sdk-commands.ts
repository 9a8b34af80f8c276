import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build, type Plugin } from 'esbuild';

/**
 * Which AWS calls a function's code can make: its bundle, built as `serverless package` builds it
 * (the service's custom.esbuild: format, target, main fields, aliases and plugins; tree-shaken but
 * not minified, so names and esbuild's `// <path>` module markers survive), holds one `new
 * GetCommand(` (`new GetCommand2(` after esbuild renames) per SDK command the project's own modules
 * construct. The generator (scripts/infra/generate.ts) grants each function's role the IAM actions
 * of those commands; test/unit/iam-permissions.test.ts checks the roles of serverless.yml with the
 * same scan.
 */

/** IAM actions each SDK command needs. A command missing here fails the generation. */
export const ACTIONS: Record<string, string[]> = {
  GetCommand: ['dynamodb:GetItem'],
  PutCommand: ['dynamodb:PutItem'],
  UpdateCommand: ['dynamodb:UpdateItem'],
  DeleteCommand: ['dynamodb:DeleteItem'],
  QueryCommand: ['dynamodb:Query'],
  ScanCommand: ['dynamodb:Scan'],
  BatchGetCommand: ['dynamodb:BatchGetItem'],
  BatchWriteCommand: ['dynamodb:BatchWriteItem'],
  // Authorised per item (Put/Update/Delete/ConditionCheck): the items are data, not imports (see TRANSACT_ACTIONS).
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
  // SESv2 SendEmail with raw content is authorised as SendRawEmail too.
  SendEmailCommand: ['ses:SendEmail', 'ses:SendRawEmail'],
  GetSecretValueCommand: ['secretsmanager:GetSecretValue'],
  // Creating a schedule hands EventBridge Scheduler the role it assumes to reach the target.
  CreateScheduleCommand: ['scheduler:CreateSchedule', 'iam:PassRole'],
  DeleteScheduleCommand: ['scheduler:DeleteSchedule'],
};

/** A transaction's items are Put/Update/Delete/ConditionCheck, chosen at run time: its role may do each. */
export const TRANSACT_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:ConditionCheckItem',
];

const CONSTRUCTED = /\bnew ([A-Za-z0-9]+?Command)\d*\(/g;
const MODULE_MARKER = /^\/\/ (\S+)$/m;

/** serverless-esbuild's own options, which esbuild does not know. */
const PLUGIN_ONLY = [
  'concurrency',
  'zipConcurrency',
  'exclude',
  'outputFileExtension',
  'outputWorkFolder',
  'outputBuildFolder',
  'packager',
  'watch',
  'keepOutputDirectory',
  'plugins',
];

/** The SDK commands the project's own modules construct in the bundle of `handler` (`functions/x/handler.handler`), sorted. */
export async function commandsOf(
  root: string,
  esbuildOptions: Record<string, unknown>,
  handler: string,
): Promise<string[]> {
  const options = Object.fromEntries(Object.entries(esbuildOptions).filter(([key]) => !PLUGIN_ONLY.includes(key)));
  const alias = Object.fromEntries(
    Object.entries((esbuildOptions.alias ?? {}) as Record<string, string>).map(([k, v]) => [
      k,
      v.startsWith('.') ? join(root, v) : v,
    ]),
  );
  const extension = (esbuildOptions.outputFileExtension as string | undefined) ?? '.js';
  // serverless-esbuild loads `plugins` as a CommonJS module exporting the plugin list.
  const plugins = esbuildOptions.plugins
    ? (createRequire(import.meta.url)(join(root, esbuildOptions.plugins as string)) as Plugin[])
    : [];
  const result = await build({
    ...options,
    entryPoints: [join(root, `${handler.slice(0, handler.lastIndexOf('.'))}.ts`)],
    absWorkingDir: root,
    bundle: true,
    minify: false,
    alias,
    plugins,
    write: false,
    outdir: '/tmp/iam-scan',
    outExtension: { '.js': extension },
    logLevel: 'error',
  });
  const outputs = result.outputFiles.filter((f) => f.path.endsWith(extension));
  if (outputs.length !== 1) throw new Error(`${handler}: expected one ${extension} bundle, got ${outputs.length}`);
  // split() with a capture group alternates: [prelude, path, code, path, code, …]
  const parts = outputs[0]!.text.split(MODULE_MARKER);
  // The project's own modules are marked (`// shared/…`, `// functions/…`): without markers, nothing would be read.
  if (!parts.some((part, i) => i % 2 === 1 && !part.includes('node_modules')))
    throw new Error(`${handler}: no module markers of the project in its bundle`);
  const commands = new Set<string>();
  for (let i = 1; i < parts.length; i += 2) {
    if (parts[i]!.includes('node_modules')) continue;
    for (const [, name] of parts[i + 1]!.matchAll(CONSTRUCTED)) commands.add(name!);
  }
  return [...commands].sort();
}

/** The IAM actions the commands need (transactions: every item kind), sorted. Throws on a command ACTIONS does not map. */
export function actionsOf(commands: string[]): string[] {
  const unknown = commands.filter((c) => !ACTIONS[c]);
  if (unknown.length)
    throw new Error(`SDK commands without IAM actions in scripts/infra/sdk-commands.ts: ${unknown.join(', ')}`);
  const actions = new Set(commands.flatMap((c) => ACTIONS[c]!));
  if (commands.includes('TransactWriteCommand') || commands.includes('TransactWriteItemsCommand'))
    for (const a of TRANSACT_ACTIONS) actions.add(a);
  return [...actions].sort();
}
