/**
 * Administration CLI. Works against whatever table the environment names (TABLE_NAME, AWS_REGION
 * and the usual AWS credentials/endpoint variables); with no TABLE_NAME it uses the stack of a
 * running `npm start` (.switchboard/local-env.<port>.json): the only one, or the one on --port.
 *
 *   npm run admin -- create-app --name "My app"             → {"application_id": "...", "api_key": "..."}
 *   npm run admin -- create-app --name "Dev" --api-key KEY  → same, with a chosen key (idempotent)
 *   npm run admin -- create-app --name "Dev" --port 3100    → on the npm start serving port 3100
 *   npm run admin -- migrate-slugs                          → once after upgrading: scheduler slugs
 *                                                              unique across applications (see
 *                                                              shared/scheduling/slug-migration.ts)
 *   npm run admin -- redrive fanout                         → every message of the fan-out DLQ back to
 *                                                              its queue (scripts/admin/redrive.ts)
 *
 * redrive finds the queues in the environment (FANOUT_DLQ_URL and FANOUT_QUEUE_URL, ...), else by the
 * names of --stage's stack, else in the running npm start's.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEAD_LETTER_QUEUES } from './infra/dead-letter-queues';
import { chooseInstance, runningInstances } from './local-stack/instances';
import { ROOT } from './local-stack/serverless-config';

const USAGE = [
  'usage: npm run admin -- create-app --name NAME [--api-key KEY] [--port PORT]',
  '       npm run admin -- migrate-slugs [--port PORT]',
  `       npm run admin -- redrive ${Object.keys(DEAD_LETTER_QUEUES).join('|')} [--stage STAGE | --port PORT]`,
].join('\n');

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

/** Points the environment at the table to administer: TABLE_NAME's, or a running npm start's. */
function useStack(port: number | undefined) {
  if (process.env.TABLE_NAME) return;
  useLocalStack(port);
}

/** Points the environment at a running npm start's stack: its endpoints, table and queues. */
function useLocalStack(port: number | undefined) {
  const chosen = chooseInstance(runningInstances(join(ROOT, '.switchboard')), port);
  if ('error' in chosen) fail(chosen.error);
  Object.assign(process.env, chosen.instance.env);
  process.stderr.write(
    `using the local stack of npm start on port ${chosen.instance.port} (${process.env.TABLE_NAME})\n`,
  );
}

function portOption(value: string | undefined): number | undefined {
  const port = value === undefined ? undefined : Number(value);
  if (port !== undefined && !(Number.isInteger(port) && port > 0 && port < 65536))
    fail('--port must be a TCP port number');
  return port;
}

async function createApp(args: string[]) {
  const { values } = parseArgs({
    args,
    options: { name: { type: 'string' }, 'api-key': { type: 'string' }, port: { type: 'string' } },
    strict: true,
  });
  const name = values.name?.trim();
  if (!name) fail(`--name is required\n${USAGE}`);
  if (name.length > 200) fail('--name must be at most 200 characters');
  const apiKey = values['api-key'];
  if (apiKey !== undefined && (apiKey.length < 8 || apiKey.length > 512 || /\s/.test(apiKey))) {
    fail('--api-key must be 8 to 512 characters without whitespace');
  }
  useStack(portOption(values.port));
  // Imported after the environment is settled: modules read their configuration when they load.
  const { createApplication } = await import('#shared/applications/service');
  const created = await createApplication({ name, apiKey });
  process.stdout.write(`${JSON.stringify({ application_id: created.application_id, api_key: created.api_key })}\n`);
}

async function migrateSlugs(args: string[]) {
  const { values } = parseArgs({ args, options: { port: { type: 'string' } }, strict: true });
  useStack(portOption(values.port));
  const { migrateSlugs: migrate } = await import('#shared/scheduling/slug-migration');
  const result = await migrate();
  for (const c of result.cleared) {
    process.stderr.write(
      `slug '${c.slug}': configuration ${c.configuration_id} of ${c.application_id} lost it to ${c.kept_by}; give it another slug\n`,
    );
  }
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

async function redrive(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    options: { port: { type: 'string' }, stage: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const [name, ...extra] = positionals;
  if (!name || extra.length) fail(`redrive takes one dead-letter queue\n${USAGE}`);
  const { isDeadLetterQueueName, moveMessages, planRedrive, queueUrl, urlVariableOf } = await import('./admin/redrive');
  if (!isDeadLetterQueueName(name))
    fail(`unknown dead-letter queue '${name}': one of ${Object.keys(DEAD_LETTER_QUEUES).join(', ')}`);
  const { loadServerlessConfig } = await import('./local-stack/serverless-config');
  const config = loadServerlessConfig();
  const plan = planRedrive(config, name);
  if ('refused' in plan) fail(`not moved: ${plan.refused}`);
  const variables = [urlVariableOf(plan.dlq), urlVariableOf(plan.source)];
  const given = variables.filter((v) => v && process.env[v]);
  if (values.stage !== undefined && given.length)
    fail(`--stage names the queues, and so does the environment (${given.join(', ')}): use one or the other`);
  if (given.length === 1) fail(`set both ${variables.join(' and ')}, or neither`);
  if (values.stage === undefined && !given.length) useLocalStack(portOption(values.port));
  // Imported after the environment is settled: the client reads the region and endpoint from it.
  const { SQSClient } = await import('@aws-sdk/client-sqs');
  const sqs = new SQSClient({});
  const [from, to] = await Promise.all(
    [plan.dlq, plan.source].map((queue) => queueUrl(sqs, config, queue, values.stage)),
  );
  if (!from || !to) fail(`no URL for ${variables.join(' or ')}: set both, or give --stage`);
  process.stderr.write(`moving the messages of ${from} to ${to}\n`);
  const { moved, returned } = await moveMessages(sqs, from, to);
  process.stderr.write(
    `moved ${moved} message${moved === 1 ? '' : 's'}${returned ? `; ${returned} failed again meanwhile and stay in the DLQ` : ''}\n`,
  );
  process.stdout.write(`${JSON.stringify({ queue: name, moved, ...(returned ? { returned } : {}) })}\n`);
}

async function main() {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'create-app') return createApp(rest);
  if (command === 'migrate-slugs') return migrateSlugs(rest);
  if (command === 'redrive') return redrive(rest);
  fail(USAGE);
}

main().catch((error: Error) => fail(`admin: ${error.name}: ${error.message}`));
