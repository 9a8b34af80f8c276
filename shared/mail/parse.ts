import type { AddressObject } from 'mailparser';

/** Parses raw MIME (inbound mail) into the fields an Agent Account message stores. */
export interface ParsedAddress {
  email: string;
  name?: string;
}

export interface ParsedMail {
  subject: string;
  from: ParsedAddress[];
  to: ParsedAddress[];
  cc: ParsedAddress[];
  bcc: ParsedAddress[];
  replyTo: ParsedAddress[];
  /** Date header in Unix seconds, if present and valid. */
  date?: number;
  html?: string;
  text?: string;
  attachments: { filename: string; contentType: string; content: Buffer; contentId?: string; inline: boolean }[];
  headers: { name: string; value: string }[];
  messageId?: string;
  inReplyTo?: string;
  references: string[];
}

function addresses(value: AddressObject | AddressObject[] | undefined): ParsedAddress[] {
  const out: ParsedAddress[] = [];
  const visit = (entries: AddressObject['value']) => {
    for (const entry of entries) {
      if (entry.group) visit(entry.group);
      else if (entry.address)
        out.push({ email: entry.address.toLowerCase(), ...(entry.name ? { name: entry.name } : {}) });
    }
  };
  for (const object of Array.isArray(value) ? value : value ? [value] : []) visit(object.value);
  return out;
}

const asList = (value: string | string[] | undefined) =>
  Array.isArray(value) ? value : value ? value.split(/\s+/).filter(Boolean) : [];

export async function parseMime(raw: Buffer): Promise<ParsedMail> {
  // mailparser (with iconv-lite and its other charsets, libmime, html-to-text) loads on the first mail parsed.
  const { simpleParser } = await import('#shared/lazy/mailparser');
  const parsed = await simpleParser(raw, { skipImageLinks: true, skipTextToHtml: true, skipTextLinks: true });
  const date =
    parsed.date && !Number.isNaN(parsed.date.getTime()) ? Math.floor(parsed.date.getTime() / 1000) : undefined;
  return {
    subject: parsed.subject ?? '',
    from: addresses(parsed.from),
    to: addresses(parsed.to),
    cc: addresses(parsed.cc),
    bcc: addresses(parsed.bcc),
    replyTo: addresses(parsed.replyTo),
    date,
    html: typeof parsed.html === 'string' ? parsed.html : undefined,
    text: parsed.text,
    attachments: parsed.attachments.map((a, i) => ({
      filename: a.filename ?? `attachment-${i + 1}`,
      contentType: a.contentType || 'application/octet-stream',
      content: a.content,
      ...(a.contentId ? { contentId: a.contentId.replace(/^<|>$/g, '') } : {}),
      inline: a.contentDisposition === 'inline' || (!!a.contentId && a.related === true),
    })),
    headers: parsed.headerLines.map((line) => ({
      name: line.line.slice(0, line.line.indexOf(':')),
      value: line.line.slice(line.line.indexOf(':') + 1).trim(),
    })),
    messageId: parsed.messageId,
    inReplyTo: parsed.inReplyTo,
    references: asList(parsed.references),
  };
}
