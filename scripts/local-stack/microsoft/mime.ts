/**
 * The MIME form of a message of the Graph fake (what `GET …/messages/{id}/$value` answers): RFC 5322
 * headers, the body as text/plain or text/html, and a multipart/mixed around it when it has attachments.
 */

export interface MimeAddress {
  name?: string;
  address: string;
}

export interface MimeMessage {
  from?: MimeAddress;
  to: MimeAddress[];
  cc: MimeAddress[];
  subject: string;
  date: number;
  messageId: string;
  body: { contentType: 'text' | 'html'; content: string };
  attachments: { name: string; contentType: string; bytes: Buffer; contentId?: string; isInline: boolean }[];
}

/** RFC 2047 encoded word for a header value that is not plain ASCII. */
function encodeWord(text: string): string {
  return /^[\x20-\x7e]*$/.test(text) ? text : `=?UTF-8?B?${Buffer.from(text, 'utf8').toString('base64')}?=`;
}

function address(a: MimeAddress): string {
  return a.name ? `${encodeWord(a.name.includes(',') ? `"${a.name}"` : a.name)} <${a.address}>` : a.address;
}

/** Base64 in lines of 76 characters, as MIME wants. */
function base64Lines(bytes: Buffer): string {
  return (bytes.toString('base64').match(/.{1,76}/g) ?? []).join('\r\n');
}

export function buildMime(m: MimeMessage): Buffer {
  const headers = [
    ...(m.from ? [`From: ${address(m.from)}`] : []),
    ...(m.to.length ? [`To: ${m.to.map(address).join(', ')}`] : []),
    ...(m.cc.length ? [`Cc: ${m.cc.map(address).join(', ')}`] : []),
    `Subject: ${encodeWord(m.subject)}`,
    `Date: ${new Date(m.date).toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: ${m.messageId}`,
    'MIME-Version: 1.0',
  ];
  const bodyPart = [
    `Content-Type: text/${m.body.contentType === 'html' ? 'html' : 'plain'}; charset="utf-8"`,
    'Content-Transfer-Encoding: base64',
    '',
    base64Lines(Buffer.from(m.body.content, 'utf8')),
  ].join('\r\n');
  if (!m.attachments.length) return Buffer.from([...headers, bodyPart, ''].join('\r\n'), 'utf8');
  const boundary = `_000_${Buffer.from(m.messageId).toString('hex').slice(0, 24)}_`;
  const parts = m.attachments.map((a) =>
    [
      `Content-Type: ${a.contentType}; name="${a.name}"`,
      `Content-Disposition: ${a.isInline ? 'inline' : 'attachment'}; filename="${a.name}"`,
      ...(a.contentId ? [`Content-ID: <${a.contentId}>`] : []),
      'Content-Transfer-Encoding: base64',
      '',
      base64Lines(a.bytes),
    ].join('\r\n'),
  );
  const text = [
    ...headers,
    `Content-Type: multipart/mixed; boundary="${boundary}"`,
    '',
    ...[bodyPart, ...parts].map((part) => `--${boundary}\r\n${part}`),
    `--${boundary}--`,
    '',
  ].join('\r\n');
  return Buffer.from(text, 'utf8');
}
