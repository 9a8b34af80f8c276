import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, type Tags } from 'yaml';

/**
 * Reads serverless.yml as data (CloudFormation short tags included) so the local stack, the test
 * gateway and the configuration tests all work from the same declarations the deployment uses. The
 * file is generated (scripts/infra/generate.ts, `npm run generate:infra`) and checked in.
 */
export const ROOT = join(fileURLToPath(import.meta.url), '..', '..', '..');

const INTRINSICS = [
  'Ref',
  'GetAtt',
  'Sub',
  'Join',
  'If',
  'Equals',
  'Select',
  'Split',
  'ImportValue',
  'FindInMap',
  'Base64',
  'GetAZs',
  'Not',
  'And',
  'Or',
  'Condition',
  'Cidr',
];

function intrinsicName(tag: string) {
  return tag === 'Ref' || tag === 'Condition' ? tag : `Fn::${tag}`;
}

const cloudFormationTags: Tags = INTRINSICS.flatMap((name) => [
  {
    tag: `!${name}`,
    resolve: (value: string) => ({ [intrinsicName(name)]: name === 'GetAtt' ? value.split('.') : value }),
  },
  {
    tag: `!${name}`,
    collection: 'seq' as const,
    resolve: (seq: { toJSON(): unknown }) => ({ [intrinsicName(name)]: seq.toJSON() }),
  },
  {
    tag: `!${name}`,
    collection: 'map' as const,
    resolve: (map: { toJSON(): unknown }) => ({ [intrinsicName(name)]: map.toJSON() }),
  },
]) as unknown as Tags;

export interface HttpApiEvent {
  function: string;
  handler: string;
  method: string;
  path: string;
}

export interface ServerlessConfig {
  service: string;
  functions: Record<
    string,
    { handler: string; role?: string; environment?: Record<string, string>; events?: Record<string, unknown>[] }
  >;
  resources: { Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }> };
  custom: Record<string, unknown>;
  provider: Record<string, unknown>;
}

export function loadServerlessConfig(file = join(ROOT, 'serverless.yml')): ServerlessConfig {
  return parseServerlessConfig(readFileSync(file, 'utf8'));
}

/** A serverless.yml text as data, intrinsics in their long form (`!GetAtt Table.Arn` → `{ 'Fn::GetAtt': ['Table', 'Arn'] }`). */
export function parseServerlessConfig(text: string): ServerlessConfig {
  return parse(text, { customTags: cloudFormationTags }) as ServerlessConfig;
}

/** `${self:service}` and `${sls:stage}` are the only variables resource names use. */
export function resolveName(template: string, service: string, stage: string): string {
  return template.replaceAll('${self:service}', service).replaceAll('${sls:stage}', stage);
}

/** Every httpApi route as (function, method, path); `*` is API Gateway's `$default` route. */
export function httpApiEvents(config: ServerlessConfig): HttpApiEvent[] {
  const events: HttpApiEvent[] = [];
  for (const [name, fn] of Object.entries(config.functions)) {
    for (const event of fn.events ?? []) {
      const route = event.httpApi;
      if (typeof route !== 'string') continue;
      if (route === '*') events.push({ function: name, handler: fn.handler, method: '*', path: '$default' });
      else {
        const [method, path] = route.split(' ');
        events.push({ function: name, handler: fn.handler, method: method!, path: path! });
      }
    }
  }
  return events;
}
