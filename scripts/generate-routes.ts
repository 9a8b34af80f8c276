/**
 * Turns each endpoint group's route table (functions/<group>/routes.ts) into one generated module,
 * functions/<group>/routes.generated.cjs: the routes as the function needs them at run time (no
 * schemas, no summaries) and every query and body schema compiled to standalone validator code (ajv
 * standalone). Functions then load plain JavaScript instead of bundling ajv, their schemas and
 * compiling them at cold start (measured: ~20 ms and ~120 KB per function). `npm run generate`
 * rewrites the files; a unit test fails when they are stale.
 *
 *   npm run generate            write the files
 *   npm run generate -- --check exit 1 if any file differs from what the schemas produce
 */
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { API_ROUTES } from '#functions/routes';
import { GENERATED_TYPES, generateGroupValidators } from '#shared/http/validator-codegen';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const check = process.argv.includes('--check');
let stale = 0;
for (const [group, routes] of Object.entries(API_ROUTES)) {
  const file = join(root, 'functions', group, 'routes.generated.cjs');
  const code = generateGroupValidators(group, routes);
  const typesFile = join(root, 'functions', group, 'routes.generated.d.cts');
  const types = GENERATED_TYPES;
  if (!existsSync(typesFile) || readFileSync(typesFile, 'utf8') !== types) {
    if (check) {
      console.error(`stale: ${typesFile}`);
      stale++;
    } else writeFileSync(typesFile, types);
  }
  const current = existsSync(file) ? readFileSync(file, 'utf8') : '';
  if (current === code) continue;
  stale++;
  if (check) console.error(`stale: ${file}`);
  else {
    writeFileSync(file, code);
    console.log(`wrote ${file}`);
  }
}
if (check && stale) process.exit(1);
