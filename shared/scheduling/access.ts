import { randomBytes } from 'node:crypto';
import type { CreateSessionBody } from '#schemas/scheduling';
import type { ApplicationContext } from '#shared/applications/authenticate';
import * as db from '#shared/db/scheduling';
import type { ConfigurationRecord } from '#shared/db/scheduling';
import { AuthenticationError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { parseId, type ApplicationId } from '#shared/ids';
import { parseBookingReference, saltMatches, sha256 } from '#shared/scheduling/reference';
import { clock } from '#shared/time';
import { env } from '#shared/config';

/**
 * Who may use a configuration's public endpoints (availability, bookings, the booking page): a
 * public configuration by its ID, or by slug with the application's ID (`client_id`); a private one
 * (`requires_session_auth`) only with `Authorization: Bearer <session>`. Sessions are 256-bit
 * random tokens, stored as their SHA-256 with a TTL and checked for expiry on every read.
 */
const SESSION_PREFIX = 'ses_';
const DEFAULT_TTL_MINUTES = 5;
const hash = sha256;

export async function configurationBySlug(appId: string, slug: string): Promise<ConfigurationRecord> {
  const app = parseId('application', appId);
  const id = app ? await db.configurationIdBySlug(app, slug) : undefined;
  const record = id ? await db.getConfiguration(id) : undefined;
  if (!record) throw new NotFoundError(`No configuration with slug '${slug}' for client '${appId}'`);
  return record;
}

export async function createSession(app: ApplicationContext, body: CreateSessionBody) {
  if ((body.configuration_id === undefined) === (body.slug === undefined)) throw new InvalidRequestError("Give one of 'configuration_id' or 'slug'");
  let record: ConfigurationRecord | undefined;
  if (body.configuration_id !== undefined) {
    const id = parseId('configuration', body.configuration_id);
    record = id ? await db.getConfiguration(id) : undefined;
    if (!record || record.application_id !== app.applicationId) throw new NotFoundError(`Configuration '${body.configuration_id}' not found`);
  } else record = await configurationBySlug(app.applicationId, body.slug!);
  const token = SESSION_PREFIX + randomBytes(32).toString('base64url');
  const expires_at = clock.nowSeconds() + (body.time_to_live ?? DEFAULT_TTL_MINUTES) * 60;
  await db.putSession(hash(token), { configuration_id: record.id, application_id: record.application_id, expires_at });
  return { session_id: token, expires_at };
}

export async function deleteSession(app: ApplicationContext, token: string): Promise<void> {
  const session = token.startsWith(SESSION_PREFIX) ? await db.getSession(hash(token)) : undefined;
  if (!session || session.application_id !== app.applicationId) throw new NotFoundError('Session not found');
  await db.deleteSession(hash(token));
}

/** What a public request may reach: a configuration, and (through a booking reference) only that one booking. */
export interface Access {
  config: ConfigurationRecord;
  /** Set when access came from a booking reference: the one booking it opens. */
  booking?: string;
  /** Whose reference it was: the guest's (reschedule, cancel) or the organizer's confirmation link. */
  role?: 'guest' | 'organizer';
}

/**
 * The configuration a public request names: by session (401 when expired or unknown), by booking
 * reference (the guest's key to one booking, private configurations included), by ID or by slug.
 */
export async function accessOf(
  authorization: string | undefined,
  ref: { configuration_id?: string | undefined; slug?: string | undefined; client_id?: string | undefined; booking_reference?: string | undefined },
): Promise<Access> {
  const bearer = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (bearer !== undefined) {
    const session = bearer.startsWith(SESSION_PREFIX) ? await db.getSession(hash(bearer)) : undefined;
    if (!session || session.expires_at <= clock.nowSeconds()) throw new AuthenticationError('The scheduler session is unknown or has expired; create a new one with POST /v3/scheduling/sessions');
    const record = await db.getConfiguration(session.configuration_id);
    if (!record) throw new NotFoundError('The configuration of this session no longer exists');
    return { config: record };
  }
  if (ref.booking_reference !== undefined) {
    const parsed = parseBookingReference(ref.booking_reference);
    const configId = parsed && parseId('configuration', parsed.configuration_id);
    const bookingId = parsed && parseId('booking', parsed.booking_id);
    const [config, booking] = configId && bookingId ? await Promise.all([db.getConfiguration(configId), db.getBooking(bookingId)]) : [undefined, undefined];
    if (!config || !booking || booking.configuration_id !== config.id) throw new NotFoundError('No booking has this reference');
    if (saltMatches(booking, parsed!.salt)) return { config, booking: booking.id, role: 'guest' };
    if (booking.confirm_salt_hash && saltMatches({ salt_hash: booking.confirm_salt_hash }, parsed!.salt)) return { config, booking: booking.id, role: 'organizer' };
    throw new NotFoundError('No booking has this reference');
  }
  let record: ConfigurationRecord | undefined;
  if (ref.configuration_id !== undefined) {
    const id = parseId('configuration', ref.configuration_id);
    record = id ? await db.getConfiguration(id) : undefined;
    if (!record) throw new NotFoundError(`Configuration '${ref.configuration_id}' not found`);
  } else if (ref.slug !== undefined) {
    if (ref.client_id === undefined) throw new InvalidRequestError("'client_id' (the application ID) is required with 'slug'");
    record = await configurationBySlug(ref.client_id, ref.slug);
  } else {
    throw new InvalidRequestError("Name the configuration: 'configuration_id', or 'slug' with 'client_id', or a session in Authorization: Bearer");
  }
  if (record.requires_session_auth) throw new AuthenticationError(`Configuration '${record.id}' is private: send a scheduler session in Authorization: Bearer`);
  return { config: record };
}

/** Access to one booking: a reference opens its own booking only (404 for any other). */
export function bookingAccess(access: Access, bookingId: string): ConfigurationRecord {
  if (access.booking !== undefined && access.booking !== bookingId) throw new NotFoundError(`Booking '${bookingId}' not found`);
  return access.config;
}

/** The configuration of a booking page URL: by slug across applications (`client_id` when several use it). */
export async function pageConfiguration(slug: string, clientId: string | undefined, session: string | undefined): Promise<ConfigurationRecord> {
  const owners = (await db.configurationIdsBySlug(slug)).filter((o) => clientId === undefined || o.application_id === clientId);
  if (owners.length === 0) throw new NotFoundError(`No booking page '${slug}'`);
  if (owners.length > 1) throw new InvalidRequestError(`Several applications use the slug '${slug}': add ?client_id=<application ID>`);
  const record = await db.getConfiguration(owners[0]!.configuration_id);
  if (!record) throw new NotFoundError(`No booking page '${slug}'`);
  if (record.requires_session_auth) {
    if (session === undefined) throw new AuthenticationError('This booking page is private: open it with ?session=<session>');
    const found = (await accessOf(`Bearer ${session}`, {})).config;
    if (found.id !== record.id) throw new AuthenticationError('This session is for another booking page');
  }
  return record;
}

/** The origin links in emails point to: PUBLIC_BASE_URL, or the host the request came to. */
export function originOf(headers: Record<string, string>): string | undefined {
  const configured = env.publicBaseUrl();
  if (configured) return configured.replace(/\/+$/, '');
  const host = headers['x-forwarded-host'] ?? headers.host;
  return host ? `${headers['x-forwarded-proto'] ?? 'http'}://${host}` : undefined;
}

export const applicationOf = (record: ConfigurationRecord): ApplicationContext => ({ applicationId: record.application_id as ApplicationId, credential: 'api_key' });
