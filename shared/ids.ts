import { createHash, randomBytes } from 'node:crypto';
import { clock } from './time';

/**
 * Branded, prefixed, time-sortable identifiers (`grant_01jd6…`). The body is a lowercase ULID:
 * 48 bits of milliseconds then 80 random bits in Crockford base32, so IDs sort by creation time
 * and can serve directly as DynamoDB sort keys.
 */
export const ID_PREFIXES = {
  application: 'app',
  grant: 'grant',
  request: 'req',
  notification: 'ntf',
  message: 'msg',
  thread: 'thr',
  folder: 'fld',
  draft: 'drf',
  template: 'tpl',
  /** An application's template, shared by its grants: its prefix tells a send which kind `template.id` names. */
  applicationTemplate: 'atpl',
  signature: 'sig',
  attachment: 'att',
  webhook: 'wh',
  delivery: 'dlv',
  job: 'job',
  upload: 'upl',
  schedule: 'sch',
  list: 'lst',
  listItem: 'lsi',
  rule: 'rul',
  policy: 'pol',
  workspace: 'wsp',
  evaluation: 'rev',
  calendar: 'cal',
  contact: 'ctc',
  contactGroup: 'ctg',
  event: 'evt',
  configuration: 'cfg',
  booking: 'bkg',
  credential: 'cred',
  redirectUri: 'ruri',
  apiKey: 'key',
  domain: 'dom',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;
export type Id<K extends IdKind> = `${(typeof ID_PREFIXES)[K]}_${string}` & { readonly __brand: K };

export type ApplicationId = Id<'application'>;
export type GrantId = Id<'grant'>;
export type NotificationId = Id<'notification'>;
export type MessageId = Id<'message'>;
export type ThreadId = Id<'thread'>;
export type DraftId = Id<'draft'>;
export type TemplateId = Id<'template'>;
export type ApplicationTemplateId = Id<'applicationTemplate'>;
export type SignatureId = Id<'signature'>;
export type AttachmentId = Id<'attachment'>;
export type WebhookId = Id<'webhook'>;
export type JobId = Id<'job'>;
export type UploadId = Id<'upload'>;
export type ScheduleId = Id<'schedule'>;
export type ListId = Id<'list'>;
export type RuleId = Id<'rule'>;
export type PolicyId = Id<'policy'>;
export type WorkspaceId = Id<'workspace'>;
export type EvaluationId = Id<'evaluation'>;
export type CalendarId = Id<'calendar'>;
export type ContactId = Id<'contact'>;
export type ContactGroupId = Id<'contactGroup'>;
export type EventId = Id<'event'>;
export type ConfigurationId = Id<'configuration'>;
export type BookingId = Id<'booking'>;
export type CredentialId = Id<'credential'>;
export type RedirectUriId = Id<'redirectUri'>;
export type ApiKeyId = Id<'apiKey'>;
export type DomainId = Id<'domain'>;

/** Milliseconds encoded in the time part of an ID (its first 10 body characters). */
export function idTime(id: string): number {
  const body = id.slice(id.indexOf('_') + 1, id.indexOf('_') + 11);
  let ms = 0;
  for (const char of body) ms = ms * 32 + ALPHABET.indexOf(char);
  return ms;
}

/**
 * The smallest and largest ID bodies of a millisecond: sort-key bounds for "created before/after t".
 * `${prefix}_${idBound(t, 'low')}` sorts before every ID created at or after t.
 */
export function idBound(ms: number, side: 'low' | 'high'): string {
  return encodeTime(Math.max(0, Math.min(ms, 2 ** 48 - 1))) + (side === 'low' ? '0' : 'z').repeat(16);
}

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const ULID_PATTERN = /^[0-9a-hjkmnp-tv-z]{26}$/;

/** The 10-character time part of a ULID (milliseconds, Crockford base 32). */
function encodeTime(ms: number): string {
  let time = '';
  let t = ms;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return time;
}

function ulid(now = clock.nowMs()): string {
  const bytes = randomBytes(16);
  let random = '';
  for (let i = 0; i < 16; i++) random += ALPHABET[bytes[i]! & 31];
  return encodeTime(now) + random;
}

export function newId<K extends IdKind>(kind: K, now?: number): Id<K> {
  return `${ID_PREFIXES[kind]}_${ulid(now)}` as Id<K>;
}

/**
 * An ID of `kind` derived from `seed`: the same seed gives the same ID (a synced message's from its
 * Message-ID header, a synced folder's from its path). Its time part encodes `ms`, as a new ID's
 * does; its random part is the SHA-256 of the seed.
 */
export function derivedId<K extends IdKind>(kind: K, ms: number, seed: string): Id<K> {
  const hash = createHash('sha256').update(seed).digest();
  let body = '';
  for (let i = 0; i < 16; i++) body += ALPHABET[hash[i]! & 31];
  return `${ID_PREFIXES[kind]}_${encodeTime(Math.max(0, Math.min(ms, 2 ** 48 - 1)))}${body}` as Id<K>;
}

/** Returns the value as a branded ID when it has the kind's prefix and a well-formed body. */
export function parseId<K extends IdKind>(kind: K, value: string): Id<K> | undefined {
  const prefix = `${ID_PREFIXES[kind]}_`;
  if (!value.startsWith(prefix)) return undefined;
  return ULID_PATTERN.test(value.slice(prefix.length)) ? (value as Id<K>) : undefined;
}
