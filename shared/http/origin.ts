import { env } from '#shared/config';

/**
 * This API's public origin, for links it hands out (booking pages in emails, the hosted OAuth
 * callback a provider redirects to): PUBLIC_BASE_URL, or the host the request came to.
 */
export function originOf(headers: Record<string, string>): string | undefined {
  const configured = env.publicBaseUrl();
  if (configured) return configured.replace(/\/+$/, '');
  const host = headers['x-forwarded-host'] ?? headers.host;
  return host ? `${headers['x-forwarded-proto'] ?? 'http'}://${host}` : undefined;
}
