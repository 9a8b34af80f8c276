import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layers the code keeps, checked on its text:
 * - functions are thin: no function imports a provider's module (shared/agent/) or a repository
 *   (shared/db/); they reach both through shared services and the provider registries;
 * - provider names appear only where providers are bound: shared/providers/ and the Agent Account's
 *   own folder (shared/agent/, shared/imap/), beside the one key whose prefix names Agent Account addresses
 *   (shared/db/keys.ts, kept for stored data); the API's enums (schemas/) take them from
 *   shared/providers/names.ts;
 * - storage imports no domain, HTTP or provider code (type-only imports of leaf type modules aside).
 */
const ROOT = join(fileURLToPath(import.meta.url), '..', '..', '..');

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Import specifiers of a module (static, dynamic and re-exports), with whether the import is type-only. */
export function importsOf(text: string): { from: string; typeOnly: boolean }[] {
  const found: { from: string; typeOnly: boolean }[] = [];
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^;]*?\sfrom\s+'([^']+)'/gms)) found.push({ from: m[3]!, typeOnly: !!m[2] });
  for (const m of text.matchAll(/import\(\s*'([^']+)'\s*\)/g)) found.push({ from: m[1]!, typeOnly: false });
  return found;
}

/** Resolves an import to a repository path prefix (`shared/db/grants`), or undefined for packages. */
export function resolveImport(file: string, from: string): string | undefined {
  if (from.startsWith('#shared/')) return `shared/${from.slice('#shared/'.length)}`;
  if (from.startsWith('#functions/')) return `functions/${from.slice('#functions/'.length)}`;
  if (from.startsWith('#schemas/')) return `schemas/${from.slice('#schemas/'.length)}`;
  if (from.startsWith('.')) return relative(ROOT, join(ROOT, file, '..', from));
  return undefined;
}

const PROVIDER_NAMES = ['agent', 'nylas', 'google', 'microsoft', 'yahoo', 'zoom', 'imap', 'icloud', 'ews'];

/** Quoted provider names in code (comments removed), as `line: literal`. */
export function providerLiterals(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  const found: string[] = [];
  code.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(/(['"`])([a-z]+)\1/g)) if (PROVIDER_NAMES.includes(m[2]!)) found.push(`${i + 1}: ${m[0]}`);
  });
  return found;
}

const PROVIDER_HOMES = ['shared/providers/', 'shared/agent/', 'shared/imap/'];
/** Files outside those homes allowed a provider name, each with its reason. */
const PROVIDER_NAME_EXCEPTIONS: Record<string, string> = {
  'shared/db/keys.ts': "the key of Agent Account addresses (`agent#<email>` / 'agent') names stored items; changing it would orphan them",
};

/** What storage may import as values: other storage, the AWS clients, and leaf utilities. */
const STORAGE_VALUE_IMPORTS = ['shared/db/', 'shared/aws/', 'shared/ids', 'shared/time', 'shared/pool', 'shared/errors', 'shared/config', 'shared/logger'];
const NEVER_FROM_STORAGE = ['shared/agent/', 'shared/http/', 'functions/', 'shared/scheduling/', 'shared/governance/', 'shared/connect/'];

describe('layers', () => {
  it('finds what it checks (the checks can fail)', () => {
    expect(importsOf("import { x } from '#shared/agent/store';\nimport type { Y } from '#shared/db/grants';\nconst z = await import('#shared/db/messages');")).toEqual([
      { from: '#shared/agent/store', typeOnly: false },
      { from: '#shared/db/grants', typeOnly: true },
      { from: '#shared/db/messages', typeOnly: false },
    ]);
    expect(resolveImport('shared/services/jobs.ts', '../db/grants')).toBe('shared/db/grants');
    expect(providerLiterals("if (grant.provider === 'agent') {}\n// 'google' in a comment\n/* 'zoom' */ const s = `imap`;")).toEqual(["1: 'agent'", '3: `imap`']);
  });

  it('keeps functions thin: no function imports a provider module (shared/agent) or a repository (shared/db)', () => {
    const files = sources('functions');
    expect(files.length).toBeGreaterThan(50);
    const violations = files.flatMap((file) =>
      importsOf(readFileSync(join(ROOT, file), 'utf8'))
        .map((i) => resolveImport(file, i.from))
        .filter((to): to is string => !!to && (to.startsWith('shared/agent/') || to.startsWith('shared/db/')))
        .map((to) => `${file} → ${to}`),
    );
    expect(violations).toEqual([]);
  });

  it('names providers only where providers are bound', () => {
    const files = [...sources('functions'), ...sources('shared'), ...sources('schemas')].filter((f) => !PROVIDER_HOMES.some((home) => f.startsWith(home)) && !(f in PROVIDER_NAME_EXCEPTIONS));
    const violations = files.flatMap((file) => providerLiterals(readFileSync(join(ROOT, file), 'utf8')).map((hit) => `${file}:${hit}`));
    expect(violations).toEqual([]);
  });

  it('keeps storage free of domain, HTTP and provider code', () => {
    const violations = sources('shared/db').flatMap((file) =>
      importsOf(readFileSync(join(ROOT, file), 'utf8')).flatMap(({ from, typeOnly }) => {
        const to = resolveImport(file, from);
        if (!to) return [];
        if (NEVER_FROM_STORAGE.some((p) => to.startsWith(p))) return [`${file} → ${to}`];
        if (!typeOnly && !STORAGE_VALUE_IMPORTS.some((p) => to.startsWith(p))) return [`${file} → ${to} (a value import)`];
        return [];
      }),
    );
    expect(violations).toEqual([]);
  });
});
