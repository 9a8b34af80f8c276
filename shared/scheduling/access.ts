import { createHash, randomBytes } from 'node:crypto';
import type { CreateSessionBody } from '#schemas/scheduling';
import type { ApplicationContext } from '#shared/applications/authenticate';
import * as db from '#shared/db/scheduling';
import type { ConfigurationRecord } from '#shared/db/scheduling';
import { AuthenticationError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { parseId, type ApplicationId } from '#shared/ids';
import { clock } from '#shared/time';

/**
 * Who may use a configuration's public endpoints (availability, bookings, the booking page): a
 * public configuration by its ID, or by slug with the application's ID (`client_id`); a private one
 * (`requires_session_auth`) only with `Authorization: Bearer <session>`. Sessions are 256-bit
 * random tokens, stored as their SHA-256 with a TTL and checked for expiry on every read.
 */
const SESSION_PREFIX = 'ses_';
const DEFAULT_TTL_MINUTES = 5;
const hash = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

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

/** The configuration a public request names: by session (401 when expired or unknown), ID or slug. */
export async function configurationOf(authorization: string | undefined, ref: { configuration_id?: string | undefined; slug?: string | undefined; client_id?: string | undefined }): Promise<ConfigurationRecord> {
  const bearer = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  if (bearer !== undefined) {
    const session = bearer.startsWith(SESSION_PREFIX) ? await db.getSession(hash(bearer)) : undefined;
    if (!session || session.expires_at <= clock.nowSeconds()) throw new AuthenticationError('The scheduler session is unknown or has expired; create a new one with POST /v3/scheduling/sessions');
    const record = await db.getConfiguration(session.configuration_id);
    if (!record) throw new NotFoundError('The configuration of this session no longer exists');
    return record;
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
  return record;
}

export const applicationOf = (record: ConfigurationRecord): ApplicationContext => ({ applicationId: record.application_id as ApplicationId, credential: 'api_key' });
