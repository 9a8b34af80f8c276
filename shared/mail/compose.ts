/**
 * Builds the raw MIME of an outgoing message with nodemailer's composer. Only in-memory contents are
 * passed: never a `path` or `href`, which would let a request make the composer read a file or fetch
 * a URL. Bcc is left out of the headers (nodemailer's default) and travels in the envelope only.
 */
export interface MailAddress {
  email: string;
  name?: string;
}

export interface OutgoingMail {
  from: MailAddress;
  to: MailAddress[];
  cc: MailAddress[];
  bcc: MailAddress[];
  replyTo: MailAddress[];
  subject: string;
  html?: string;
  text?: string;
  attachments: { filename: string; contentType: string; content: Buffer; contentId?: string; inline: boolean }[];
  /** Message-ID with angle brackets. */
  messageId: string;
  inReplyTo?: string;
  references: string[];
  headers: { name: string; value: string }[];
  date: Date;
  /** iMIP: the iCalendar text, sent as a `text/calendar; method=…` alternative and as invite.ics. */
  calendar?: { method: string; content: string };
}

const address = (a: MailAddress) => ({ name: a.name ?? '', address: a.email });

export async function composeMime(mail: OutgoingMail): Promise<Buffer> {
  // nodemailer's composer loads on the first message composed.
  const { MailComposer } = await import('#shared/lazy/mail-composer');
  const composer = new MailComposer({
    from: address(mail.from),
    to: mail.to.map(address),
    cc: mail.cc.map(address),
    bcc: mail.bcc.map(address),
    replyTo: mail.replyTo.map(address),
    subject: mail.subject,
    ...(mail.html !== undefined ? { html: mail.html } : {}),
    ...(mail.text !== undefined ? { text: mail.text } : {}),
    attachments: mail.attachments.map((a) => ({
      filename: a.filename,
      content: a.content,
      contentType: a.contentType,
      ...(a.contentId ? { cid: a.contentId.replace(/^<|>$/g, '') } : {}),
      contentDisposition: a.inline ? 'inline' : 'attachment',
    })),
    messageId: mail.messageId,
    ...(mail.inReplyTo ? { inReplyTo: mail.inReplyTo } : {}),
    ...(mail.references.length ? { references: mail.references } : {}),
    headers: mail.headers.map((h) => ({ key: h.name, value: h.value })),
    date: mail.date,
    ...(mail.calendar
      ? { icalEvent: { method: mail.calendar.method, content: mail.calendar.content, filename: 'invite.ics' } }
      : {}),
  });
  return new Promise((resolve, reject) => {
    composer.compile().build((error, message) => (error ? reject(error) : resolve(message)));
  });
}
