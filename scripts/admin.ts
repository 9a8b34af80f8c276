/**
 * Administration CLI. Works against whatever table the environment names (TABLE_NAME, AWS_REGION
 * and the usual AWS credentials/endpoint variables); with no TABLE_NAME it uses the stack that a
 * running `npm start` recorded in .switchboard/local-env.json.
 *
 *   npm run admin -- create-app --name "My app"             → {"application_id": "...", "api_key": "..."}
 *   npm run admin -- create-app --name "Dev" --api-key KEY  → same, with a chosen key (idempotent)
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT } from './local-stack/serverless-config';

const USAGE = 'usage: npm run admin -- create-app --name NAME [--api-key KEY]';

function fail(message: string): never {
  process.stderr.write(`${message}\n`);
  process.exit(2);
}

async function main() {
  const [command, ...rest] = process.argv.slice(2);
  if (command !== 'create-app') fail(USAGE);
  const { values } = parseArgs({
    args: rest,
    options: { name: { type: 'string' }, 'api-key': { type: 'string' } },
    strict: true,
  });
  const name = values.name?.trim();
  if (!name) fail(`--name is required\n${USAGE}`);
  if (name.length > 200) fail('--name must be at most 200 characters');
  const apiKey = values['api-key'];
  if (apiKey !== undefined && (apiKey.length < 8 || apiKey.length > 512 || /\s/.test(apiKey))) {
    fail('--api-key must be 8 to 512 characters without whitespace');
  }

  if (!process.env.TABLE_NAME) {
    const localEnv = join(ROOT, '.switchboard', 'local-env.json');
    if (!existsSync(localEnv)) fail('TABLE_NAME is not set and no local stack is running (start one with `npm start`).');
    Object.assign(process.env, JSON.parse(readFileSync(localEnv, 'utf8')));
    process.stderr.write(`using the local stack of npm start (${process.env.TABLE_NAME})\n`);
  }
  // Imported after the environment is settled: modules read their configuration when they load.
  const { createApplication } = await import('#shared/applications/service');
  const created = await createApplication({ name, apiKey });
  process.stdout.write(`${JSON.stringify({ application_id: created.application_id, api_key: created.api_key })}\n`);
}

main().catch((error: Error) => fail(`admin: ${error.name}: ${error.message}`));
