import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The layers the code keeps, checked on its text (bottom to top: storage and the provider contract
 * beside the records it types; the stored mailbox (shared/mailbox/) and a connected account's
 * credentials and servers (shared/accounts/); the provider implementations (shared/agent/,
 * shared/imap/, shared/dav/); the connect flows that create their grants (shared/connect/); the
 * registries that bind a grant to its implementation; services and functions):
 * - functions are thin: no function imports a provider's module, the stored mailbox or a repository
 *   (shared/db/); they reach them through shared services and the provider registries;
 * - the stored mailbox is provider-neutral: it imports no implementation and no registry; the
 *   contract imports nothing that implements, binds or serves it; shared/accounts/ imports no
 *   implementation, connect flow, registry or mailbox;
 * - implementations import no other implementation, no connect flow and no registry: what they
 *   share is below them (the mailbox, the accounts, the contract's ports); the connect flows import
 *   no registry;
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
  for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^;]*?\sfrom\s+'([^']+)'/gms))
    found.push({ from: m[3]!, typeOnly: !!m[2] });
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
    for (const m of line.matchAll(/(['"`])([a-z]+)\1/g))
      if (PROVIDER_NAMES.includes(m[2]!)) found.push(`${i + 1}: ${m[0]}`);
  });
  return found;
}

const PROVIDER_HOMES = [
  'shared/providers/',
  'shared/registries/',
  'shared/agent/',
  'shared/imap/',
  'shared/google/',
  'shared/microsoft/',
];
/** Files outside those homes allowed a provider name, each with its reason. */
const PROVIDER_NAME_EXCEPTIONS: Record<string, string> = {
  'shared/db/keys.ts':
    "the key of Agent Account addresses (`agent#<email>` / 'agent') names stored items; changing it would orphan them",
};

/** What storage may import as values: other storage, the AWS clients, and leaf utilities. */
const STORAGE_VALUE_IMPORTS = [
  'shared/db/',
  'shared/aws/',
  'shared/ids',
  'shared/time',
  'shared/pool',
  'shared/errors',
  'shared/config',
  'shared/logger',
];
const NEVER_FROM_STORAGE = [
  'shared/agent/',
  'shared/imap/',
  'shared/dav/',
  'shared/mailbox/',
  'shared/registries/',
  'shared/http/',
  'functions/',
  'shared/scheduling/',
  'shared/governance/',
  'shared/connect/',
];

/** The provider implementations: each serves one kind of grant, and none imports another. */
const IMPLEMENTATIONS = ['shared/agent/', 'shared/imap/', 'shared/dav/', 'shared/google/', 'shared/microsoft/'];
/**
 * What the contract may not import: it sits at the bottom beside the records it types, so nothing
 * that implements, binds, stores into or serves it.
 */
const ABOVE_THE_CONTRACT = [
  ...IMPLEMENTATIONS,
  'shared/registries/',
  'shared/mailbox/',
  'shared/accounts/',
  'shared/connect/',
  'shared/applications/authenticate',
  'shared/http/',
  'shared/services/',
  'shared/grants/',
  'functions/',
];

/** The imports of each file under `dirs` that resolve under one of `forbidden`, as `file → target` (extensions dropped). */
export function importsInto(files: readonly { file: string; text: string }[], forbidden: readonly string[]): string[] {
  return files.flatMap(({ file, text }) =>
    importsOf(text)
      .map((i) => resolveImport(file, i.from))
      .filter((to): to is string => !!to && forbidden.some((p) => to.startsWith(p)))
      .map((to) => `${file} → ${to.replace(/\.ts$/, '')}`),
  );
}
const read = (dir: string) => sources(dir).map((file) => ({ file, text: readFileSync(join(ROOT, file), 'utf8') }));

describe('layers', () => {
  it('finds what it checks (the checks can fail)', () => {
    expect(
      importsOf(
        "import { x } from '#shared/mailbox/store';\nimport type { Y } from '#shared/db/grants';\nconst z = await import('#shared/db/messages');",
      ),
    ).toEqual([
      { from: '#shared/mailbox/store', typeOnly: false },
      { from: '#shared/db/grants', typeOnly: true },
      { from: '#shared/db/messages', typeOnly: false },
    ]);
    expect(resolveImport('shared/services/jobs.ts', '../db/grants')).toBe('shared/db/grants');
    expect(
      providerLiterals("if (grant.provider === 'agent') {}\n// 'google' in a comment\n/* 'zoom' */ const s = `imap`;"),
    ).toEqual(["1: 'agent'", '3: `imap`']);
    // Each import rule finds what breaks it.
    const files = [
      {
        file: 'shared/mailbox/store.ts',
        text: "import { agentInvitations } from '#shared/agent/itip';\nimport { messagesOf } from '#shared/registries/messages';\nimport type { Message } from '#shared/providers/contract';",
      },
      { file: 'shared/providers/contract.ts', text: "import type { MessageRecord } from '#shared/mailbox/types';" },
      {
        file: 'shared/imap/sync.ts',
        text: "import { storeMessages } from '#shared/mailbox/store';\nimport { createEvent } from '../dav/events';",
      },
    ];
    expect(importsInto(files, ['shared/agent/', 'shared/registries/'])).toEqual([
      'shared/mailbox/store.ts → shared/agent/itip',
      'shared/mailbox/store.ts → shared/registries/messages',
    ]);
    expect(importsInto(files, ['shared/mailbox/'])).toEqual([
      'shared/providers/contract.ts → shared/mailbox/types',
      'shared/imap/sync.ts → shared/mailbox/store',
    ]);
    expect(
      importsInto(
        [files[2]!],
        IMPLEMENTATIONS.filter((p) => p !== 'shared/imap/'),
      ),
    ).toEqual(['shared/imap/sync.ts → shared/dav/events']);
    const lower = [
      {
        file: 'shared/providers/contract.ts',
        text: "import type { ApplicationContext } from '#shared/applications/authenticate';\nimport type { ApplicationContext as A } from '#shared/caller';",
      },
      {
        file: 'shared/accounts/passwords.ts',
        text: "import { connectGrant } from '#shared/connect/flow';\nimport { mailAccessOf } from '../imap/access';",
      },
      {
        file: 'shared/connect/custom-account.ts',
        text: "import { verifyImap } from '#shared/imap/connect';\nimport { accountHooksOf } from '#shared/registries/accounts';",
      },
    ];
    expect(importsInto([lower[0]!], ABOVE_THE_CONTRACT)).toEqual([
      'shared/providers/contract.ts → shared/applications/authenticate',
    ]);
    expect(importsInto([lower[1]!], [...IMPLEMENTATIONS, 'shared/connect/'])).toEqual([
      'shared/accounts/passwords.ts → shared/connect/flow',
      'shared/accounts/passwords.ts → shared/imap/access',
    ]);
    expect(importsInto([lower[2]!], ['shared/registries/'])).toEqual([
      'shared/connect/custom-account.ts → shared/registries/accounts',
    ]);
  });

  it('keeps functions thin: no function imports a provider implementation, the stored mailbox or a repository', () => {
    const files = read('functions');
    expect(files.length).toBeGreaterThan(50);
    expect(importsInto(files, [...IMPLEMENTATIONS, 'shared/mailbox/', 'shared/db/'])).toEqual([]);
  });

  it('keeps the stored mailbox provider-neutral: it imports no implementation and no registry', () => {
    const files = read('shared/mailbox');
    expect(files.length).toBeGreaterThan(20);
    expect(importsInto(files, [...IMPLEMENTATIONS, 'shared/registries/'])).toEqual([]);
  });

  it('keeps the contract at the bottom: it imports nothing that implements, binds or serves it', () => {
    expect(importsInto(read('shared/providers'), ABOVE_THE_CONTRACT)).toEqual([]);
  });

  it("keeps a connected account's credentials and servers below the implementations", () => {
    const files = read('shared/accounts');
    expect(files.length).toBeGreaterThan(5);
    expect(
      importsInto(files, [...IMPLEMENTATIONS, 'shared/registries/', 'shared/connect/', 'shared/mailbox/']),
    ).toEqual([]);
  });

  it('keeps the implementations apart: none imports another, a registry or a connect flow', () => {
    const cross = IMPLEMENTATIONS.flatMap((dir) =>
      importsInto(read(dir.slice(0, -1)), [
        ...IMPLEMENTATIONS.filter((other) => other !== dir),
        'shared/registries/',
        'shared/connect/',
      ]),
    );
    expect(cross).toEqual([]);
  });

  it('keeps the connect flows above the implementations and beneath the registries', () => {
    expect(importsInto(read('shared/connect'), ['shared/registries/'])).toEqual([]);
  });

  it('names providers only where providers are bound', () => {
    const files = [...sources('functions'), ...sources('shared'), ...sources('schemas')].filter(
      (f) => !PROVIDER_HOMES.some((home) => f.startsWith(home)) && !(f in PROVIDER_NAME_EXCEPTIONS),
    );
    const violations = files.flatMap((file) =>
      providerLiterals(readFileSync(join(ROOT, file), 'utf8')).map((hit) => `${file}:${hit}`),
    );
    expect(violations).toEqual([]);
  });

  it('keeps storage free of domain, HTTP and provider code', () => {
    const violations = sources('shared/db').flatMap((file) =>
      importsOf(readFileSync(join(ROOT, file), 'utf8')).flatMap(({ from, typeOnly }) => {
        const to = resolveImport(file, from);
        if (!to) return [];
        if (NEVER_FROM_STORAGE.some((p) => to.startsWith(p))) return [`${file} → ${to}`];
        if (!typeOnly && !STORAGE_VALUE_IMPORTS.some((p) => to.startsWith(p)))
          return [`${file} → ${to} (a value import)`];
        return [];
      }),
    );
    expect(violations).toEqual([]);
  });
});
