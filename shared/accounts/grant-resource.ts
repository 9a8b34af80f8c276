import type { GrantRecord } from '#shared/db/grants';
import { publicProviderName } from '#shared/providers/names';
import type { Grant } from '#schemas/grants';

/** The public shape of a grant (the stored record minus internal fields). */
export function toGrantResource(record: GrantRecord): Grant {
  const { application_id: _app, provider, ...resource } = record;
  return { ...resource, provider: publicProviderName(provider) as Grant['provider'] };
}

/** The spec returns the user agent "hidden/obscured": keep its product token's first characters only. */
export function obscureUserAgent(userAgent: string): string | undefined {
  if (!userAgent) return undefined;
  const visible = userAgent.slice(0, Math.min(4, userAgent.length));
  return visible + '*'.repeat(Math.min(12, Math.max(0, userAgent.length - visible.length)));
}
