import type { ApplicationContext } from '#shared/caller';
import { getGrant, getGrantByEmail, getGrantByExternalId, type GrantRecord } from '#shared/db/grants';
import { ApiError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { parseId, type GrantId } from '#shared/ids';

export type GrantRef =
  | { kind: 'id'; value: string }
  | { kind: 'email'; value: string }
  | { kind: 'external'; value: string }
  | { kind: 'me' };

/**
 * Parses `{grant_id}` as the spec lists it: `<grant_id>`, `grant:<grant_id>`, `<email>`,
 * `email:<email>`, `external:<external_id>` or `me`.
 */
export function parseGrantRef(raw: string): GrantRef {
  if (raw === 'me') return { kind: 'me' };
  if (raw.startsWith('grant:')) return { kind: 'id', value: raw.slice('grant:'.length) };
  if (raw.startsWith('email:')) return { kind: 'email', value: raw.slice('email:'.length) };
  if (raw.startsWith('external:')) return { kind: 'external', value: raw.slice('external:'.length) };
  if (raw.includes('@')) return { kind: 'email', value: raw };
  return { kind: 'id', value: raw };
}

/**
 * The grant a `{grant_id}` names before it is read, when the name says it: its ID (`<id>`, `grant:<id>`),
 * or `me` with an access token. An email address or external ID is known only once the grant is read.
 */
export function grantIdNamed(app: ApplicationContext, raw: string): GrantId | undefined {
  const ref = parseGrantRef(raw);
  if (ref.kind === 'me') return app.credential === 'access_token' ? app.grantId : undefined;
  return ref.kind === 'id' ? parseId('grant', ref.value) : undefined;
}

/** At most 200 characters of a reference, for a message (never half a character). */
const shown = (raw: string) => (raw.length > 200 ? `${Array.from(raw).slice(0, 200).join('')}…` : raw);
/** Lengths as the schemas count them: in characters, not UTF-16 units. */
const characters = (s: string) => (s.length <= 256 ? s.length : Array.from(s).length);

/**
 * Finds the grant named by a path parameter, always within the calling application (and, with an
 * access token, only the token's grant); 404 otherwise.
 */
export async function resolveGrant(app: ApplicationContext, raw: string): Promise<GrantRecord> {
  const ref = parseGrantRef(raw);
  let grant: GrantRecord | undefined;
  switch (ref.kind) {
    case 'me':
      if (app.credential !== 'access_token') {
        throw new InvalidRequestError(
          "The grant 'me' is only available with an access token from the OAuth token exchange; with an API key, name the grant by ID, email address or external ID",
        );
      }
      grant = await getGrant(app.applicationId, app.grantId);
      break;
    case 'id': {
      const id = parseId('grant', ref.value);
      grant = id ? await getGrant(app.applicationId, id) : undefined;
      break;
    }
    case 'email':
      grant = characters(ref.value) <= 254 ? await getGrantByEmail(app.applicationId, ref.value) : undefined;
      break;
    case 'external':
      grant =
        ref.value.length > 0 && characters(ref.value) <= 256
          ? await getGrantByExternalId(app.applicationId, ref.value)
          : undefined;
      break;
    default: {
      const exhaustive: never = ref;
      throw new Error(`Unhandled grant reference ${String(exhaustive)}`);
    }
  }
  // An access token reaches its own grant only: any other is as unknown as another application's.
  if (!grant || (app.credential === 'access_token' && grant.id !== app.grantId))
    throw new NotFoundError(`Grant '${shown(raw)}' not found`);
  return grant;
}

/**
 * The grant a participant or an address names: by `grantId` when given (any pattern a path takes,
 * which must then be the grant of `email`), else by `email`, as `app` may reach it: any grant of its
 * application with the API key, only its own with an access token. Undefined when there is none:
 * another grant is exactly as unknown to a token as an address that is no grant at all.
 */
export async function grantNamed(
  app: ApplicationContext,
  email: string,
  grantId?: string,
): Promise<GrantRecord | undefined> {
  try {
    const grant = await resolveGrant(app, grantId ?? `email:${email}`);
    return grantId === undefined || grant.email.toLowerCase() === email.trim().toLowerCase() ? grant : undefined;
  } catch (error) {
    if (error instanceof ApiError && error.status < 500) return undefined;
    throw error;
  }
}
