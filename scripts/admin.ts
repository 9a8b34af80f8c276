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
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chooseInstance, runningInstances } from './local-stack/instances';
import { ROOT } from './local-stack/serverless-config';

const USAGE = [
  'usage: npm run admin -- create-app --name NAME [--api-key KEY] [--port PORT]',
  '       npm run admin -- migrate-slugs [--port PORT]',
].join('\n');

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

/** Points the environment at the table to administer: TABLE_NAME's, or a running npm start's. */
function useStack(port: number | undefined) {
  if (process.env.TABLE_NAME) return;
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

async function main() {
  const [command, ...rest] = process.argv.slice(2);
  if (command === 'create-app') return createApp(rest);
  if (command === 'migrate-slugs') return migrateSlugs(rest);
  fail(USAGE);
}

main().catch((error: Error) => fail(`admin: ${error.name}: ${error.message}`));
