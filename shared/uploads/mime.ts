import { Readable } from 'node:stream';

/**
 * The MIME of a message carrying large uploaded files, built without nodemailer's `build()`, which
 * gathers the message in chunks and then concatenates them (the message held twice at its end).
 * The message is composed without those files first (shared/mail/compose.ts, as every message is:
 * tracking, calendar parts and all); its content becomes the first part of a multipart/mixed, each
 * file a base64 part after it, and the whole is streamed into one buffer sized for it beforehand.
 */
export interface StreamedPart {
  filename: string;
  contentType: string;
  size: number;
  contentId?: string;
  inline: boolean;
  /** The file, or a way to read it as a stream (from S3: it is then never held whole here). */
  content: Buffer | (() => Promise<Readable>);
}

/** Bytes of `size` bytes as base64 in lines of 76 characters and CRLF (nodemailer's encoder). */
const base64Bytes = (size: number) => {
  const chars = Math.ceil(size / 3) * 4;
  return chars + 2 * Math.ceil(chars / 76);
};

/** The header block and body of a composed message. */
function split(raw: Buffer): { headers: string[]; body: Buffer } {
  const end = raw.indexOf('\r\n\r\n');
  const head = raw.subarray(0, end).toString('latin1');
  // Unfolded into whole fields (continuation lines start with white space).
  const headers = head.split(/\r\n(?![ \t])/);
  return { headers, body: raw.subarray(end + 4) };
}

const CONTENT_FIELDS = /^(content-type|content-transfer-encoding|mime-version):/i;

/** The composed message `bare` with `parts` appended as attachments: see the module comment. */
export async function appendStreamedParts(bare: Buffer, parts: readonly StreamedPart[]): Promise<Buffer> {
  if (!parts.length) return bare;
  const { MimeNode } = await import('#shared/lazy/mime-node');
  const { headers, body } = split(bare);
  const root = new MimeNode('multipart/mixed');
  const content = headers.filter((h) => CONTENT_FIELDS.test(h) && !/^mime-version:/i.test(h));
  root.appendChild(new MimeNode().setRaw(Buffer.concat([Buffer.from(`${content.join('\r\n')}\r\n\r\n`), body])));
  for (const part of parts) {
    const node = root.createChild(part.contentType, { filename: part.filename });
    node.setHeader('Content-Transfer-Encoding', 'base64');
    node.setHeader('Content-Disposition', part.inline ? 'inline' : 'attachment');
    if (part.contentId) node.setHeader('Content-Id', `<${part.contentId.replace(/^<|>$/g, '')}>`);
    // Fed in small views of the file: the base64 encoder then works a chunk at a time, not on the whole.
    node.setContent(
      Buffer.isBuffer(part.content) ? Readable.from(slices(part.content), { objectMode: false }) : await part.content(),
    );
  }
  const capacity = bare.length + parts.reduce((n, p) => n + base64Bytes(p.size) + 2048, 1024);
  // The message's own fields are kept byte for byte, in place of the multipart's header block (its
  // Content-Type kept): nodemailer parses and rebuilds the address and date fields it is given, so
  // they cannot go through it as they are.
  const fields = headers.filter((h) => !CONTENT_FIELDS.test(h));
  return collect(root.createReadStream() as Readable, capacity, (head) => {
    const type = head.split(/\r\n(?![ \t])/).find((h) => /^content-type:/i.test(h));
    if (!type) throw new Error('appendStreamedParts: the multipart has no Content-Type');
    return Buffer.from(`${[...fields, 'MIME-Version: 1.0', type].join('\r\n')}\r\n\r\n`, 'latin1');
  });
}

const SLICE = 64 * 1024;

function* slices(content: Buffer): Generator<Buffer> {
  for (let at = 0; at < content.length; at += SLICE) yield content.subarray(at, at + SLICE);
}

/**
 * Reads a stream into one buffer of `capacity` (grown only if the stream outruns it), its header
 * block (up to the first empty line) replaced by what `head` makes of it.
 */
async function collect(stream: Readable, capacity: number, head: (block: string) => Buffer): Promise<Buffer> {
  let out = Buffer.allocUnsafe(capacity);
  let at = 0;
  /** The start of the stream while its header block is still coming. */
  let pending: Buffer | undefined = Buffer.alloc(0);
  for await (const chunk of stream) {
    let data = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    if (pending) {
      pending = Buffer.concat([pending, data]);
      const end = pending.indexOf('\r\n\r\n');
      if (end < 0) continue;
      data = Buffer.concat([head(pending.subarray(0, end).toString('latin1')), pending.subarray(end + 4)]);
      pending = undefined;
    }
    if (at + data.length > out.length) {
      const larger = Buffer.allocUnsafe(Math.max(out.length * 2, at + data.length));
      out.copy(larger, 0, 0, at);
      out = larger;
    }
    data.copy(out, at);
    at += data.length;
  }
  return out.subarray(0, at);
}
