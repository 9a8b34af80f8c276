import { randomBytes } from 'node:crypto';

/**
 * Google's batch transport (`POST /batch/gmail/v1`, `/batch/calendar/v3`, `/batch`): whole HTTP
 * requests as the parts of one `multipart/mixed` body, and the whole HTTP answers as the parts of
 * one `multipart/mixed` answer, each paired with its request by `Content-ID` (`<item-N>` answered
 * as `<response-item-N>`; Google may answer in any order). The outer request's Authorization holds
 * for every inner one. A batch saves round trips, not quota: n calls in a batch count as n.
 */

/** Google's advice: larger batches trigger its rate limits. */
export const MAX_BATCH = 50;

/** Where each API's batch endpoint is (the discovery documents' `batchPath`). */
export const BATCH_PATHS = {
  gmail: '/batch/gmail/v1',
  calendar: '/batch/calendar/v3',
  people: '/batch',
  directory: '/batch/admin/directory_v1',
} as const;

export interface BatchPart {
  method: string;
  /** Path and query, as the inner request line carries them. */
  target: string;
  body?: string;
}

/** The body and content type of a batch of `parts`, each with Content-ID `<item-i>`. */
export function encodeBatch(parts: readonly BatchPart[]): { contentType: string; body: string } {
  const boundary = `batch_${randomBytes(12).toString('hex')}`;
  const lines: string[] = [];
  parts.forEach((part, i) => {
    lines.push(
      `--${boundary}`,
      'Content-Type: application/http',
      `Content-ID: <item-${i}>`,
      '',
      `${part.method} ${part.target} HTTP/1.1`,
      ...(part.body !== undefined
        ? [
            'Content-Type: application/json; charset=UTF-8',
            `Content-Length: ${Buffer.byteLength(part.body)}`,
            '',
            part.body,
          ]
        : ['']),
      '',
    );
  });
  lines.push(`--${boundary}--`, '');
  return { contentType: `multipart/mixed; boundary=${boundary}`, body: lines.join('\r\n') };
}

/** The boundary of a `multipart/mixed` content type, quoted or not. */
export function boundaryOf(contentType: string | null | undefined): string | undefined {
  const match = /^multipart\/mixed\s*;(?:.*;)?\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType ?? '');
  return match ? (match[1] ?? match[2]) : undefined;
}

/**
 * The answers of a batch, by item index: each inner HTTP answer as a Response. An item the batch
 * does not answer (or answers in a way that cannot be read) is left out: its caller sees no answer.
 */
export function decodeBatchAnswer(contentType: string | null, text: string): Map<number, Response> {
  const boundary = boundaryOf(contentType);
  const answers = new Map<number, Response>();
  if (!boundary) return answers;
  for (const chunk of text.split(`--${boundary}`).slice(1)) {
    if (chunk.startsWith('--')) break;
    const part = splitHead(chunk.replace(/^\r?\n/, ''));
    if (!part) continue;
    const id = /^<?response-item-(\d+)>?$/.exec(header(part.head, 'content-id') ?? '')?.[1];
    if (id === undefined) continue;
    const inner = splitHead(part.rest);
    const status = /^HTTP\/1\.[01]\s+(\d{3})/.exec(inner?.head[0] ?? '')?.[1];
    if (!inner || !status) continue;
    const headers = new Headers();
    for (const line of inner.head.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
    }
    const code = Number(status);
    const body = inner.rest.replace(/\r?\n$/, '');
    answers.set(Number(id), new Response(code === 204 || !body ? null : body, { status: code, headers }));
  }
  return answers;
}

/** Header lines up to the first blank line, and the rest. */
function splitHead(text: string): { head: string[]; rest: string } | undefined {
  const match = /\r?\n\r?\n/.exec(text);
  if (!match) {
    const head = text.split(/\r?\n/).filter(Boolean);
    return head.length ? { head, rest: '' } : undefined;
  }
  return { head: text.slice(0, match.index).split(/\r?\n/), rest: text.slice(match.index + match[0].length) };
}

const header = (lines: readonly string[], name: string) =>
  lines
    .find((l) => l.toLowerCase().startsWith(`${name}:`))
    ?.slice(name.length + 1)
    .trim();
