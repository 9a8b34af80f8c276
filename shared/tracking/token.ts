import { createHmac, timingSafeEqual } from 'node:crypto';
import { derivedKey } from '#shared/crypto/sealed';
import { parseId, type ApplicationId, type GrantId, type MessageId } from '#shared/ids';

/**
 * The tokens of tracking URLs (`/t/o/<token>`, `/t/l/<token>`): what was opened or clicked, signed
 * with HMAC-SHA256 under a key derived (HKDF) from the deployment's key material for this purpose
 * alone. A link's target is inside the signed part, so the redirect is never open: a token whose
 * signature does not match is refused before anything is read or counted. Tokens do not expire: a
 * message read a year later still opens and its links still lead where they did.
 *
 * Format: `<base64url(JSON)>.<base64url(HMAC)>`; the JSON is `{k, a, g, m}` plus `i` and `u` for a link
 * (`g` left out for a transactional send, which has no grant).
 */
export type TrackingTarget =
  | { kind: 'open'; applicationId: ApplicationId; grantId?: GrantId; messageId: MessageId }
  | {
      kind: 'link';
      applicationId: ApplicationId;
      /** Absent for a transactional send (no grant). */
      grantId?: GrantId;
      messageId: MessageId;
      /** The link's position among the tracked links of the body (0 first). */
      index: number;
      url: string;
    };

const VERSION = 't1';
/** Links to longer URLs are left as they are: the token carries the URL, and the whole path stays well under API Gateway's limits. */
const MAX_URL_LENGTH = 2048;
/** Tokens longer than any this deployment issues are refused unread. */
export const MAX_TOKEN_LENGTH = 4096;

const mac = async (payload: string) =>
  createHmac('sha256', await derivedKey('tracking'))
    .update(`${VERSION}.${payload}`)
    .digest();

/** The token of one tracked open or link. */
export async function signTarget(target: TrackingTarget): Promise<string> {
  const whose = { a: target.applicationId, ...(target.grantId ? { g: target.grantId } : {}), m: target.messageId };
  const fields = target.kind === 'open' ? { k: 'o', ...whose } : { k: 'l', ...whose, i: target.index, u: target.url };
  const payload = Buffer.from(JSON.stringify(fields), 'utf8').toString('base64url');
  return `${payload}.${(await mac(payload)).toString('base64url')}`;
}

/** What a token names, when its signature holds and it is of `kind`; undefined for anything else. */
export async function verifyTarget(token: string, kind: TrackingTarget['kind']): Promise<TrackingTarget | undefined> {
  if (token.length > MAX_TOKEN_LENGTH) return undefined;
  const dot = token.indexOf('.');
  if (dot <= 0 || token.indexOf('.', dot + 1) !== -1) return undefined;
  const payload = token.slice(0, dot);
  const given = Buffer.from(token.slice(dot + 1), 'base64url');
  const expected = await mac(payload);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  let fields: Record<string, unknown>;
  try {
    fields = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const applicationId = parseId('application', String(fields.a));
  // No grant: a transactional send's.
  const grantId = fields.g === undefined ? undefined : parseId('grant', String(fields.g));
  const messageId = parseId('message', String(fields.m));
  if (!applicationId || (fields.g !== undefined && !grantId) || !messageId) return undefined;
  const whose = { applicationId, ...(grantId ? { grantId } : {}), messageId };
  if (kind === 'open') return fields.k === 'o' ? { kind, ...whose } : undefined;
  if (fields.k !== 'l' || !Number.isSafeInteger(fields.i) || typeof fields.u !== 'string') return undefined;
  if (!isTrackableUrl(fields.u)) return undefined;
  return { kind, ...whose, index: fields.i as number, url: fields.u };
}

/** Link targets that are rewritten (and so redirected to): absolute http(s) URLs of reasonable length. */
export function isTrackableUrl(url: string): boolean {
  if (url.length > MAX_URL_LENGTH) return false;
  try {
    const parsed = new URL(url);
    return (parsed.protocol === 'https:' || parsed.protocol === 'http:') && parsed.hostname !== '';
  } catch {
    return false;
  }
}
