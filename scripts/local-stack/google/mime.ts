/**
 * MIME for the local Gmail fake: a raw RFC 5322 message read into a tree of entities (headers with
 * RFC 2047/2231 decoding, multipart bodies, transfer encodings undone), its readable text and Gmail's
 * snippet of it.
 */

export interface MimeHeader {
  name: string;
  value: string;
}

export interface MimeNode {
  headers: MimeHeader[];
  /** Lower-case `type/subtype`; text/plain when the entity does not say. */
  mimeType: string;
  /** Content-Type parameters, names in lower case. */
  params: Record<string, string>;
  filename: string;
  /** Gmail serves such a part by attachmentId instead of inline data. */
  attachment: boolean;
  /** The decoded body of a leaf (transfer encoding undone); empty for a multipart. */
  content: Buffer;
  parts: MimeNode[];
}

/** Decodes RFC 2047 encoded words (`=?UTF-8?B?...?=`), the whitespace between two of them dropped. */
function decodeEncodedWords(value: string): string {
  return value
    .replace(/(=\?[^?]+\?[BbQq]\?[^?]*\?=)\s+(?==\?[^?]+\?[BbQq]\?[^?]*\?=)/g, '$1')
    .replace(/=\?([^?]+)\?([BbQq])\?([^?]*)\?=/g, (_, charset: string, encoding: string, text: string) => {
      const bytes =
        encoding.toUpperCase() === 'B'
          ? Buffer.from(text, 'base64')
          : Buffer.from(
              text
                .replace(/_/g, ' ')
                .replace(/=([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
              'latin1',
            );
      return decodeText(bytes, charset.split('*')[0]!);
    });
}

/** Bytes in a named charset as text; an unknown charset is read as UTF-8. */
function decodeText(bytes: Buffer, charset = 'utf-8'): string {
  try {
    return new TextDecoder(charset.trim().toLowerCase() || 'utf-8').decode(bytes);
  } catch {
    return new TextDecoder('utf-8').decode(bytes);
  }
}

/** Header lines unfolded (a line starting with white space continues the one before). */
function parseHeaders(text: string): MimeHeader[] {
  const headers: MimeHeader[] = [];
  for (const line of text.split(/\r?\n/)) {
    const last = headers[headers.length - 1];
    if (/^[ \t]/.test(line) && last) {
      last.value += line;
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0 || /\s/.test(line.slice(0, colon))) continue;
    headers.push({ name: line.slice(0, colon), value: line.slice(colon + 1) });
  }
  // Bytes were read as latin1 so offsets stay bytes; 8-bit header text is UTF-8 in practice.
  return headers.map((h) => ({
    name: h.name,
    value: decodeEncodedWords(Buffer.from(h.value.trim(), 'latin1').toString('utf8')),
  }));
}

export const headerOf = (headers: MimeHeader[], name: string) =>
  headers.find((h) => h.name.toLowerCase() === name.toLowerCase())?.value;

/** `value; a=b; c="d"` with RFC 2231 parameters (`name*=utf-8''x`, `name*0*=`) put back together. */
function parseParams(header: string): { value: string; params: Record<string, string> } {
  const semicolon = header.indexOf(';');
  const value = (semicolon < 0 ? header : header.slice(0, semicolon)).trim();
  const raw: [string, string][] = [];
  for (const m of (semicolon < 0 ? '' : header.slice(semicolon)).matchAll(
    /;\s*([^=;\s]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)/g,
  )) {
    const v = m[2]!.startsWith('"') ? m[2]!.slice(1, -1).replace(/\\(.)/g, '$1') : m[2]!.trim();
    raw.push([m[1]!.toLowerCase(), v]);
  }
  const params: Record<string, string> = {};
  const sections = new Map<string, { index: number; text: string; extended: boolean }[]>();
  for (const [name, v] of raw) {
    const m = /^(.+?)\*(?:(\d+)(\*?))?$/.exec(name);
    if (!m) params[name] = decodeEncodedWords(v);
    else {
      const list = sections.get(m[1]!) ?? [];
      list.push({ index: Number(m[2] ?? 0), text: v, extended: m[2] === undefined || m[3] === '*' });
      sections.set(m[1]!, list);
    }
  }
  for (const [name, list] of sections) {
    list.sort((a, b) => a.index - b.index);
    let charset = 'utf-8';
    const bytes: Buffer[] = list.map((s, i) => {
      let text = s.text;
      if (!s.extended) return Buffer.from(text, 'latin1');
      if (i === 0 && /^[^']*'[^']*'/.test(text)) {
        charset = text.slice(0, text.indexOf("'")) || charset;
        text = text.slice(text.indexOf("'", text.indexOf("'") + 1) + 1);
      }
      return Buffer.from(
        text.replace(/%([0-9A-Fa-f]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))),
        'latin1',
      );
    });
    params[name] = decodeText(Buffer.concat(bytes), charset);
  }
  return { value, params };
}

function decodeQuotedPrintable(text: string): Buffer {
  const s = text.replace(/[ \t]+(?=\r?\n)/g, '').replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const hex = s.slice(i + 1, i + 3);
    if (s[i] === '=' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else bytes.push(s.charCodeAt(i) & 0xff);
  }
  return Buffer.from(bytes);
}

/** The bodies between `--boundary` lines (preamble and epilogue dropped). */
function splitMultipart(body: string, boundary: string): string[] {
  const delimiter = `--${boundary}`;
  const parts: string[] = [];
  let start = -1;
  let pos = 0;
  while (pos < body.length) {
    const eol = body.indexOf('\n', pos);
    const end = eol < 0 ? body.length : eol + 1;
    const line = body.slice(pos, end).trimEnd();
    if (line === delimiter || line === `${delimiter}--`) {
      if (start >= 0) parts.push(body.slice(start, pos).replace(/\r?\n$/, ''));
      if (line !== delimiter) return parts;
      start = end;
    }
    pos = end;
  }
  if (start >= 0) parts.push(body.slice(start));
  return parts;
}

/** One entity, its bytes read as latin1 (one character per byte). */
function parseEntity(text: string): MimeNode {
  const blank = /\r?\n\r?\n/.exec(text);
  const startsBlank = /^\r?\n/.test(text);
  const headerText = startsBlank ? '' : blank ? text.slice(0, blank.index) : text;
  const bodyText = startsBlank ? text.replace(/^\r?\n/, '') : blank ? text.slice(blank.index + blank[0].length) : '';
  const headers = parseHeaders(headerText);
  const type = parseParams(headerOf(headers, 'Content-Type') ?? 'text/plain');
  const mimeType = /^[^/\s]+\/[^/\s]+$/.test(type.value) ? type.value.toLowerCase() : 'text/plain';
  const disposition = parseParams(headerOf(headers, 'Content-Disposition') ?? '');
  const filename = disposition.params.filename ?? type.params.name ?? '';
  const attachment = filename !== '' || disposition.value.toLowerCase() === 'attachment';
  const boundary = type.params.boundary;
  if (mimeType.startsWith('multipart/') && boundary) {
    const parts = splitMultipart(bodyText, boundary).map(parseEntity);
    return { headers, mimeType, params: type.params, filename, attachment: false, content: Buffer.alloc(0), parts };
  }
  const encoding = (headerOf(headers, 'Content-Transfer-Encoding') ?? '').trim().toLowerCase();
  const content =
    encoding === 'base64'
      ? Buffer.from(bodyText.replace(/[^A-Za-z0-9+/]/g, ''), 'base64')
      : encoding === 'quoted-printable'
        ? decodeQuotedPrintable(bodyText)
        : Buffer.from(bodyText, 'latin1');
  return { headers, mimeType, params: type.params, filename, attachment, content, parts: [] };
}

export function parseMime(raw: Buffer): MimeNode {
  return parseEntity(raw.toString('latin1'));
}

export function leaves(node: MimeNode): MimeNode[] {
  return node.parts.length ? node.parts.flatMap(leaves) : [node];
}

function htmlToText(html: string): string {
  return html
    .replace(/<(script|style)[^>]*>[\s\S]*?<\/\1>/gi, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&nbsp;/gi, ' ')
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&quot;/gi, '"')
    .replace(/&#39;|&apos;/gi, "'")
    .replace(/&lt;/gi, '<')
    .replace(/&gt;/gi, '>')
    .replace(/&amp;/gi, '&');
}

/** The readable text of a message: its plain-text parts, else its HTML parts without tags. */
export function bodyText(root: MimeNode): string {
  const texts = leaves(root).filter((n) => !n.attachment && n.mimeType.startsWith('text/'));
  const plain = texts.filter((n) => n.mimeType === 'text/plain');
  const chosen = plain.length ? plain : texts.filter((n) => n.mimeType === 'text/html');
  return chosen
    .map((n) => {
      const text = decodeText(n.content, n.params.charset);
      return n.mimeType === 'text/html' ? htmlToText(text) : text;
    })
    .join('\n');
}

const SNIPPET_LENGTH = 100;

/** Gmail's snippet: the start of the text, white space collapsed, HTML-escaped (as Gmail does: `&#39;`). */
export function snippetOf(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, SNIPPET_LENGTH)
    .trim()
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}
