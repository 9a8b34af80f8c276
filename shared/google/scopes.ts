import type { GrantRecord } from '#shared/db/grants';

/**
 * Gmail's metadata scope: a grant that holds it and no scope that reads messages may read labels and
 * headers only (Gmail refuses `format=full`, `format=raw` and a search `q` to it). Its messages are
 * answered without bodies, and its message notifications are `message.*.metadata` (limited data), as
 * the specification says.
 */
const METADATA = 'https://www.googleapis.com/auth/gmail.metadata';
const READING = new Set([
  'https://mail.google.com/',
  'https://www.googleapis.com/auth/gmail.readonly',
  'https://www.googleapis.com/auth/gmail.modify',
]);

export const metadataOnly = (grant: GrantRecord): boolean =>
  grant.scope.includes(METADATA) && !grant.scope.some((s) => READING.has(s));
