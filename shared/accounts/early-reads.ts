import { getConnector } from '#shared/db/connectors';
import type { GrantRecord } from '#shared/db/grants';
import { getProviderTokens, type ProviderTokensRecord } from '#shared/db/oauth';
import type { ApplicationId, GrantId } from '#shared/ids';

/**
 * The reads a connected grant's request needs besides the grant itself (its provider tokens, its
 * connector's API base), made while the grant is read instead of after it: one DynamoDB round trip
 * less before the provider is called. Only for what this instance has seen that grant read before
 * (an earlier request of it called providerAccessToken, or the client of a live provider read its
 * connector), so a grant that needs neither (an Agent Account) never costs a read it does not use.
 * Remembered by application and grant, and used only once the grant is resolved within that
 * application, of the same provider: a request naming another application's grant reads nothing of
 * it. Each early read serves one call (the first); a second call in the same request reads again.
 *
 * Every function's grant resolution imports this module: it reads through the table modules only
 * (never the connectors' service, whose secrets and their key would come into every bundle, and whose
 * key ARN a function without secrets is not given).
 */
interface Needs {
  provider: string;
  tokens: boolean;
  apiBase: boolean;
}

interface EarlyReads {
  appId: ApplicationId;
  provider: string;
  tokens?: Promise<ProviderTokensRecord | undefined>;
  apiBase?: Promise<string | undefined>;
}

const MAX_REMEMBERED = 10_000;
const needs = new Map<string, Needs>();
const attached = new WeakMap<GrantRecord, EarlyReads>();

const keyOf = (appId: string, grantId: string) => `${appId}#${grantId}`;

/** The connector's `api_base_url` (none for a provider without a connector). */
const connectorApiBase = async (appId: ApplicationId, provider: string) =>
  (await getConnector(appId, provider))?.settings.api_base_url;

function remember(grant: GrantRecord, need: 'tokens' | 'apiBase'): void {
  const key = keyOf(grant.application_id, grant.id);
  const known = needs.get(key);
  if (known?.provider === grant.provider && known[need]) return;
  needs.delete(key);
  if (needs.size >= MAX_REMEMBERED) needs.delete(needs.keys().next().value!);
  needs.set(key, {
    provider: grant.provider,
    tokens: need === 'tokens' || (known?.provider === grant.provider && known.tokens),
    apiBase: need === 'apiBase' || (known?.provider === grant.provider && known.apiBase),
  });
}

/** Never an unhandled rejection: the read may fail before anything awaits it (or nothing ever does). */
function quiet<T>(read: Promise<T>): Promise<T> {
  read.catch(() => undefined);
  return read;
}

/** Starts the reads a request of this grant made before, as the grant is read; undefined when none. */
export function startEarlyReads(appId: ApplicationId, grantId: GrantId): EarlyReads | undefined {
  const known = needs.get(keyOf(appId, grantId));
  if (!known) return undefined;
  return {
    appId,
    provider: known.provider,
    ...(known.tokens ? { tokens: quiet(getProviderTokens(grantId, true)) } : {}),
    ...(known.apiBase ? { apiBase: quiet(connectorApiBase(appId, known.provider)) } : {}),
  };
}

/** Hands the early reads to the grant they were made for, once it is resolved (and only if it is that grant). */
export function attachEarlyReads(grant: GrantRecord, reads: EarlyReads | undefined): void {
  if (reads && grant.application_id === reads.appId && grant.provider === reads.provider) attached.set(grant, reads);
}

/** The grant's provider tokens record: read early for this request (once), else read now. */
export function providerTokensOf(grant: GrantRecord): Promise<ProviderTokensRecord | undefined> {
  remember(grant, 'tokens');
  const reads = attached.get(grant);
  const early = reads?.tokens;
  if (early) {
    delete reads.tokens;
    return early;
  }
  return getProviderTokens(grant.id as GrantId, true);
}

/** The grant's connector's `api_base_url`: read early for this request (once), else read now. */
export function apiBaseOf(grant: GrantRecord): Promise<string | undefined> {
  remember(grant, 'apiBase');
  const reads = attached.get(grant);
  const early = reads?.apiBase;
  if (early) {
    delete reads.apiBase;
    return early;
  }
  return connectorApiBase(grant.application_id as ApplicationId, grant.provider);
}
