/**
 * Delivery status notifications (RFC 3464): a `multipart/report; report-type=delivery-status` whose
 * `message/delivery-status` part has one block of per-message fields, then one block per recipient
 * (Final-Recipient, Action, Status, Diagnostic-Code), and whose last part returns the message or its
 * headers (`message/rfc822`, `text/rfc822-headers`). Read from the raw MIME: the mail parser folds
 * the status part into the text body. Pure functions, no I/O.
 */
export interface DsnRecipient {
  /** The address the report is about (Final-Recipient, its `rfc822;` type removed), lowercase. */
  address: string;
  action: string;
  /** The enhanced status code (RFC 3463), such as `5.1.1`. */
  status: string;
  diagnosticCode?: string;
  remoteMta?: string;
}

export interface DeliveryReport {
  /** The Message-ID of the message reported on, with angle brackets, when the report tells it. */
  originalMessageId?: string;
  reportingMta?: string;
  recipients: DsnRecipient[];
}

/** The largest report read (a report returning a whole large message is cut there: only headers are needed). */
const MAX_SCANNED = 2 * 1024 * 1024;
const MAX_DEPTH = 4;

interface Part {
  headers: Map<string, string>;
  body: string;
}

/** Header lines unfolded into a map of lowercase name → value (the first of a repeated name wins). */
function headerMap(block: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const line of block.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!headers.has(name)) headers.set(name, line.slice(colon + 1).trim());
  }
  return headers;
}

function splitPart(text: string): Part {
  const end = /\r?\n\r?\n/.exec(text);
  if (!end) return { headers: headerMap(text), body: '' };
  return { headers: headerMap(text.slice(0, end.index)), body: text.slice(end.index + end[0].length) };
}

/** A Content-Type's media type (lowercase) and parameters. */
function contentType(value: string | undefined): { type: string; params: Map<string, string> } {
  const params = new Map<string, string>();
  if (!value) return { type: 'text/plain', params };
  const [type = '', ...rest] = value.split(';');
  for (const match of rest.join(';').matchAll(/([\w.-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;\s]+))/g)) {
    params.set(match[1]!.toLowerCase(), match[2] !== undefined ? match[2].replace(/\\(.)/g, '$1') : match[3]!);
  }
  return { type: type.trim().toLowerCase(), params };
}

function decoded(part: Part): string {
  const encoding = (part.headers.get('content-transfer-encoding') ?? '').toLowerCase();
  if (encoding === 'base64') return Buffer.from(part.body.replace(/\s+/g, ''), 'base64').toString('latin1');
  if (encoding === 'quoted-printable')
    return part.body
      .replace(/=\r?\n/g, '')
      .replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  return part.body;
}

function childrenOf(part: Part, boundary: string): Part[] {
  const delimiter = `--${boundary}`;
  const pieces = part.body.split(delimiter);
  // Before the first delimiter is the preamble; the piece starting with `--` is the close delimiter's.
  return pieces
    .slice(1)
    .filter((piece) => !piece.startsWith('--'))
    .map((piece) => splitPart(piece.replace(/^[ \t]*\r?\n/, '')));
}

/** The report's status and returned parts, wherever the multipart/report is among nested multiparts. */
function findReport(part: Part, depth: number): { status?: Part; returned?: Part } | undefined {
  const { type, params } = contentType(part.headers.get('content-type'));
  if (!type.startsWith('multipart/') || depth > MAX_DEPTH) return undefined;
  const boundary = params.get('boundary');
  if (!boundary) return undefined;
  const children = childrenOf(part, boundary);
  if (type === 'multipart/report' && (params.get('report-type') ?? '').toLowerCase().includes('delivery-status')) {
    const typeOf = (p: Part) => contentType(p.headers.get('content-type')).type;
    return {
      status: children.find((p) => /^message\/(global-)?delivery-status$/.test(typeOf(p))),
      returned: children.find((p) =>
        /^(message\/(global|rfc822)|text\/rfc822-headers|message\/global-headers)$/.test(typeOf(p)),
      ),
    };
  }
  for (const child of children) {
    const found = findReport(child, depth + 1);
    if (found) return found;
  }
  return undefined;
}

const bracketed = (value: string | undefined) => {
  const id = value?.match(/<[^<>\s]+>/)?.[0];
  return id ?? (value && /^[^<>\s]+@[^<>\s]+$/.test(value.trim()) ? `<${value.trim()}>` : undefined);
};

/** The parsed report, or undefined when the message is not a delivery status notification. */
export function parseDeliveryReport(raw: Buffer): DeliveryReport | undefined {
  const text = raw.subarray(0, MAX_SCANNED).toString('latin1');
  const top = splitPart(text);
  const report = findReport(top, 0);
  if (!report?.status) return undefined;
  const blocks = decoded(report.status)
    .split(/\r?\n[ \t]*\r?\n/)
    .map((block) => block.trim())
    .filter(Boolean)
    .map(headerMap);
  const [perMessage = new Map<string, string>(), ...perRecipient] = blocks;
  const recipients: DsnRecipient[] = [];
  for (const fields of perRecipient) {
    const recipient = fields.get('final-recipient') ?? fields.get('original-recipient');
    const status = fields.get('status')?.match(/\b[245]\.\d{1,3}\.\d{1,3}\b/)?.[0];
    const action = fields.get('action')?.toLowerCase().trim();
    if (!recipient || !status || !action) continue;
    const address = recipient
      .replace(/^[^;]*;/, '')
      .trim()
      .replace(/^<|>$/g, '')
      .toLowerCase();
    if (!address) continue;
    const diagnostic = fields.get('diagnostic-code')?.replace(/^[^;]*;\s*/, '');
    const remote = fields.get('remote-mta')?.replace(/^[^;]*;\s*/, '');
    recipients.push({
      address,
      action,
      status,
      ...(diagnostic ? { diagnosticCode: diagnostic } : {}),
      ...(remote ? { remoteMta: remote } : {}),
    });
  }
  const returned = report.returned ? splitPart(decoded(report.returned)).headers : undefined;
  const originalMessageId =
    bracketed(perMessage.get('original-message-id') ?? perMessage.get('x-original-message-id')) ??
    bracketed(returned?.get('message-id'));
  const reportingMta = perMessage.get('reporting-mta')?.replace(/^[^;]*;\s*/, '');
  return {
    ...(originalMessageId ? { originalMessageId } : {}),
    ...(reportingMta ? { reportingMta } : {}),
    recipients,
  };
}

/**
 * The recipients a report says the message failed for: Action `failed` (RFC 3464: no further attempt
 * is made; usually with a 5.x.x status, or 4.4.7 when a temporary failure outlasted the retries).
 * `delayed`, `delivered`, `relayed` and `expanded` are not bounces.
 */
export const failedRecipients = (report: DeliveryReport): DsnRecipient[] =>
  report.recipients.filter((r) => r.action === 'failed');

/** The SMTP reply code of a Diagnostic-Code (`550 5.1.1 …` → 550), when it starts with one. */
export const smtpCodeOf = (diagnostic: string | undefined): number | undefined => {
  const code = diagnostic?.match(/^\s*([245]\d\d)\b/)?.[1];
  return code ? Number(code) : undefined;
};
