import { randomBytes } from 'node:crypto';
import type { CreateSessionBody } from '#schemas/scheduling';
import type { SessionAuthenticator } from '#shared/applications/authenticate';
import type { ApplicationContext, SessionContext } from '#shared/caller';
import * as db from '#shared/db/scheduling';
import type { BookingRecord, ConfigurationRecord } from '#shared/db/scheduling';
import { AuthenticationError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { parseId } from '#shared/ids';
import { parseBookingReference, saltMatches, sha256 } from '#shared/scheduling/reference';
import { clock } from '#shared/time';

/**
 * Who may use a configuration's public endpoints (availability, bookings, the booking page): a
 * public configuration by its ID, or by slug with the application's ID (`client_id`); a private one
 * (`requires_session_auth`) only with `Authorization: Bearer <session>`; and the application itself,
 * with its API key as the bearer (what the official SDKs send), any configuration of its own,
 * private ones included. Sessions are 256-bit random tokens, stored as their SHA-256 with a TTL and
 * checked for expiry on every read. Slugs are unique across applications, so a slug names one
 * configuration.
 */
const SESSION_PREFIX = 'ses_';
const DEFAULT_TTL_MINUTES = 5;
const hash = sha256;

/** The live session a bearer token is (undefined for anything else); the scheduler's function passes it to its HTTP stack. */
export const schedulerSessions: SessionAuthenticator = {
  resolve: async (token) => {
    if (!token.startsWith(SESSION_PREFIX)) return undefined;
    const session = await db.getSession(hash(token));
    if (!session || session.expires_at <= clock.nowSeconds()) return undefined;
    return { applicationId: session.application_id, configurationId: session.configuration_id };
  },
  rejection:
    'Authorization: Bearer is neither a valid API key nor a live scheduler session (a session is unknown or has expired once deleted or past its time_to_live; create a new one with POST /v3/scheduling/sessions)',
};

/** A configuration of `appId` by slug; 404 when no configuration has the slug or another application's has it. */
export async function configurationBySlug(appId: string, slug: string): Promise<ConfigurationRecord> {
  const owner = await db.slugOwner(slug);
  const record =
    owner && owner.application_id === appId ? await db.getConfiguration(owner.configuration_id) : undefined;
  if (!record) throw new NotFoundError(`No configuration with slug '${slug}' for client '${appId}'`);
  return record;
}

export async function createSession(app: ApplicationContext, body: CreateSessionBody) {
  if ((body.configuration_id === undefined) === (body.slug === undefined))
    throw new InvalidRequestError("Give one of 'configuration_id' or 'slug'");
  let record: ConfigurationRecord | undefined;
  if (body.configuration_id !== undefined) {
    const id = parseId('configuration', body.configuration_id);
    record = id ? await db.getConfiguration(id) : undefined;
    if (!record || record.application_id !== app.applicationId)
      throw new NotFoundError(`Configuration '${body.configuration_id}' not found`);
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

/** Who is calling a public endpoint: the application (API key), a session, or nobody. */
export interface Caller {
  app?: ApplicationContext | undefined;
  session?: SessionContext | undefined;
}

/**
 * The configuration a public request names: by session, by booking reference (the guest's key to
 * one booking, private configurations included), by ID or by slug. With the API key, only the
 * application's own configurations exist (404 for another's), and private ones are open.
 */
export async function accessOf(
  caller: Caller,
  ref: {
    configuration_id?: string | undefined;
    slug?: string | undefined;
    client_id?: string | undefined;
    booking_reference?: string | undefined;
  },
): Promise<Access> {
  if (caller.session) {
    const record = await db.getConfiguration(caller.session.configurationId);
    if (!record || record.application_id !== caller.session.applicationId)
      throw new NotFoundError('The configuration of this session no longer exists');
    return { config: record };
  }
  const app = caller.app?.applicationId;
  const mine = (record: ConfigurationRecord | undefined) =>
    record && (app === undefined || record.application_id === app) ? record : undefined;
  if (ref.booking_reference !== undefined) {
    const parsed = parseBookingReference(ref.booking_reference);
    const configId = parsed && parseId('configuration', parsed.configuration_id);
    const bookingId = parsed && parseId('booking', parsed.booking_id);
    const [found, booking] =
      configId && bookingId
        ? await Promise.all([db.getConfiguration(configId), db.getBooking(bookingId)])
        : [undefined, undefined];
    const config = mine(found);
    if (!config || !booking || booking.configuration_id !== config.id)
      throw new NotFoundError('No booking has this reference');
    if (saltMatches(booking, parsed!.salt)) return { config, booking: booking.id, role: 'guest' };
    if (booking.confirm_salt_hash && saltMatches({ salt_hash: booking.confirm_salt_hash }, parsed!.salt))
      return { config, booking: booking.id, role: 'organizer' };
    throw new NotFoundError('No booking has this reference');
  }
  let record: ConfigurationRecord | undefined;
  if (ref.configuration_id !== undefined) {
    const id = parseId('configuration', ref.configuration_id);
    record = mine(id ? await db.getConfiguration(id) : undefined);
    if (!record) throw new NotFoundError(`Configuration '${ref.configuration_id}' not found`);
  } else if (ref.slug !== undefined) {
    const client = ref.client_id ?? app;
    if (client === undefined)
      throw new InvalidRequestError(
        "'client_id' (the application ID) is required with 'slug' (or send the application's API key in Authorization: Bearer)",
      );
    if (app !== undefined && client !== app)
      throw new NotFoundError(`No configuration with slug '${ref.slug}' for client '${client}'`);
    record = await configurationBySlug(client, ref.slug);
  } else {
    throw new InvalidRequestError(
      "Name the configuration: 'configuration_id', or 'slug' (with 'client_id' unless the API key is sent), or a session in Authorization: Bearer",
    );
  }
  if (record.requires_session_auth && app === undefined) {
    throw new AuthenticationError(
      `Configuration '${record.id}' is private: send a scheduler session (or the application's API key) in Authorization: Bearer`,
    );
  }
  return { config: record };
}

/** Access to one booking: a reference opens its own booking only (404 for any other). */
export function bookingAccess(access: Access, bookingId: string): ConfigurationRecord {
  if (access.booking !== undefined && access.booking !== bookingId)
    throw new NotFoundError(`Booking '${bookingId}' not found`);
  return access.config;
}

/**
 * One booking of a configuration (404 for any other, and for one whose event was never made). Here
 * rather than in bookings.ts: the booking pages read a booking without the booking code.
 */
export async function requireBooking(config: ConfigurationRecord, id: string): Promise<BookingRecord> {
  const parsed = parseId('booking', id);
  const record = parsed ? await db.getBooking(parsed) : undefined;
  // A record of the three-commit flow that never got its event (no `event_status`, no event) was never a booking.
  if (!record || record.configuration_id !== config.id || (!record.event_id && record.event_status === undefined))
    throw new NotFoundError(`Booking '${id}' not found`);
  return record;
}

/** The configuration of a booking page URL: by slug (unique across applications; `client_id`, when given, must be its application's). */
export async function pageConfiguration(
  slug: string,
  clientId: string | undefined,
  session: string | undefined,
): Promise<ConfigurationRecord> {
  const owner = await db.slugOwner(slug);
  const record =
    owner && (clientId === undefined || owner.application_id === clientId)
      ? await db.getConfiguration(owner.configuration_id)
      : undefined;
  if (!record) throw new NotFoundError(`No booking page '${slug}'`);
  if (record.requires_session_auth) {
    if (session === undefined)
      throw new AuthenticationError('This booking page is private: open it with ?session=<session>');
    const live = await schedulerSessions.resolve(session);
    if (!live)
      throw new AuthenticationError(
        'The scheduler session is unknown or has expired; create a new one with POST /v3/scheduling/sessions',
      );
    if (live.configurationId !== record.id) throw new AuthenticationError('This session is for another booking page');
  }
  return record;
}

/**
 * The authority a configuration's availability and bookings act with: what the request that saved
 * it could reach. Saved with the API key, any grant of the application; saved with an access token,
 * that token's grant only (its organizer), so a public page never reads more than the token could.
 */
export const authorityOf = (record: ConfigurationRecord): ApplicationContext =>
  record.saved_with === 'access_token'
    ? { applicationId: record.application_id, credential: 'access_token', grantId: record.grant_id, scope: [] }
    : { applicationId: record.application_id, credential: 'api_key' };
