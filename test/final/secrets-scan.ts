import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { logsDir, secretsDir, type RememberedSecret } from '../support/secrets';

/**
 * The scanning half of the secrets audit (test/support/secrets.ts writes the other half): which
 * remembered secret shows up in which log line, or in which stored item.
 */

/** Shorter values are left out: they could occur by chance (a 4-letter test secret in any word). */
export const MIN_SECRET_LENGTH = 12;

/**
 * The ways a secret can be written down without being changed: as it is, escaped inside a JSON
 * string (a log line, a stored document), URL- or form-encoded (a logged URL or query); a PEM key also
 * line by line, since one line of it is already a leak.
 */
export function spellings(value: string): string[] {
  const forms = new Set([
    value,
    JSON.stringify(value).slice(1, -1),
    encodeURIComponent(value),
    new URLSearchParams({ v: value }).toString().slice(2),
  ]);
  if (value.includes('\n'))
    for (const line of value.split(/\r?\n/)) if (/^[A-Za-z0-9+/=]+$/.test(line)) forms.add(line);
  return [...forms].filter((form) => form.length >= MIN_SECRET_LENGTH);
}

const WINDOW = MIN_SECRET_LENGTH;
const BASE = 0x01000193;
/** BASE^(WINDOW-1), modulo 2^32. */
const TOP = Array.from({ length: WINDOW - 1 }).reduce<number>((power) => Math.imul(power, BASE), 1);

function windowHash(text: string, start: number): number {
  let hash = 0;
  for (let i = start; i < start + WINDOW; i++) hash = (Math.imul(hash, BASE) + text.charCodeAt(i)) | 0;
  return hash;
}

/**
 * Finds any of many secrets in a text in one pass (Rabin-Karp over the first WINDOW characters of
 * every spelling): a run's logs are tens of megabytes and its secrets thousands, too many for
 * `includes` of each secret in each line.
 */
export class SecretFinder {
  private readonly byHash = new Map<number, { form: string; secret: RememberedSecret }[]>();
  readonly size: number;

  constructor(secrets: Iterable<RememberedSecret>) {
    let size = 0;
    for (const secret of secrets) {
      const forms = spellings(secret.value);
      if (forms.length) size++;
      for (const form of forms) {
        const hash = windowHash(form, 0);
        const bucket = this.byHash.get(hash) ?? [];
        bucket.push({ form, secret });
        this.byHash.set(hash, bucket);
      }
    }
    this.size = size;
  }

  /** Every secret in `text`, once each. */
  find(text: string): RememberedSecret[] {
    if (text.length < WINDOW || this.byHash.size === 0) return [];
    const found = new Set<RememberedSecret>();
    let hash = windowHash(text, 0);
    for (let i = 0; ; i++) {
      const bucket = this.byHash.get(hash);
      if (bucket) for (const { form, secret } of bucket) if (text.startsWith(form, i)) found.add(secret);
      if (i + WINDOW >= text.length) break;
      hash = (Math.imul(hash - Math.imul(text.charCodeAt(i), TOP), BASE) + text.charCodeAt(i + WINDOW)) | 0;
    }
    return [...found];
  }
}

/** Every secret remembered in the run (all workers' registry files). */
export function readRemembered(runDir: string): RememberedSecret[] {
  const dir = secretsDir(runDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((name) => name.endsWith('.txt'))
    .flatMap((name) =>
      readFileSync(join(dir, name), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line) as RememberedSecret),
    );
}

export interface LogFinding {
  file: string;
  line: number;
  what: string;
}

/** Every log line of the run that holds a secret; `lines` counts the lines read. */
export function scanLogs(
  runDir: string,
  finder: SecretFinder,
): { lines: number; files: number; findings: LogFinding[] } {
  const dir = logsDir(runDir);
  const files = existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith('.log')) : [];
  let lines = 0;
  const findings: LogFinding[] = [];
  for (const name of files) {
    const file = join(dir, name);
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((text, index) => {
        if (!text) return;
        lines++;
        for (const secret of finder.find(text)) findings.push({ file, line: index + 1, what: secret.what });
      });
  }
  return { lines, files: files.length, findings };
}

export interface ItemFinding {
  pk: string;
  sk: string;
  attribute: string;
  what: string;
}

/** Sets and binary values as text, so that a secret inside them is found too. */
const readable = (_key: string, value: unknown) =>
  value instanceof Set ? [...value] : value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : value;

/** Every attribute of the items that holds a secret in plaintext (a hash or a sealed value holds none). */
export function scanItems(items: Iterable<Record<string, unknown>>, finder: SecretFinder): ItemFinding[] {
  const findings: ItemFinding[] = [];
  for (const item of items) {
    for (const [attribute, value] of Object.entries(item)) {
      const text = typeof value === 'string' ? value : JSON.stringify(readable('', value), readable);
      for (const secret of finder.find(text ?? ''))
        findings.push({ pk: String(item.pk), sk: String(item.sk), attribute, what: secret.what });
    }
  }
  return findings;
}
