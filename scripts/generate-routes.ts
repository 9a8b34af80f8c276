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
import { ALL_ROUTES, API_ROUTES } from '#functions/routes';
import {
  FALLBACK_TYPES,
  GENERATED_TYPES,
  generateFallbackRoutes,
  generateGroupValidators,
} from '#shared/http/validator-codegen';

const root = join(fileURLToPath(import.meta.url), '..', '..');
const check = process.argv.includes('--check');
let stale = 0;

/** Writes a generated file when it differs (or, with --check, reports it). */
function emit(file: string, content: string, announce = true): void {
  if (existsSync(file) && readFileSync(file, 'utf8') === content) return;
  stale++;
  if (check) console.error(`stale: ${file}`);
  else {
    writeFileSync(file, content);
    if (announce) console.log(`wrote ${file}`);
  }
}

for (const [group, routes] of Object.entries(API_ROUTES)) {
  emit(join(root, 'functions', group, 'routes.generated.d.cts'), GENERATED_TYPES, false);
  emit(join(root, 'functions', group, 'routes.generated.cjs'), generateGroupValidators(group, routes));
}
emit(join(root, 'functions', 'fallback', 'routes.generated.d.cts'), FALLBACK_TYPES, false);
emit(join(root, 'functions', 'fallback', 'routes.generated.cjs'), generateFallbackRoutes(ALL_ROUTES));
if (check && stale) process.exit(1);
