/**
 * Attachment file names as a receiver's mail client will use them to save a file: the last path
 * segment only (both `/` and `\` separate, as in busboy's multipart handling), without control
 * characters, and never `.` or `..`. A name that has nothing left becomes `fallback`.
 */
export function safeFilename(name: string, fallback = 'attachment'): string {
  const last = name.split(/[/\\]/).pop() ?? '';
  // eslint-disable-next-line no-control-regex
  const clean = last.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  return clean === '' || clean === '.' || clean === '..' ? fallback : clean;
}
