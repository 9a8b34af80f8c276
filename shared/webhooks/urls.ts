import { isIP } from 'node:net';
import { InvalidRequestError } from '#shared/errors';
import { classifyAddress, normalHostname, type UrlPolicy } from '#shared/net/addresses';

// The address policy is shared with every outgoing request (shared/net/); re-exported for the webhook modules.
export {
  allowedAddresses,
  BlockedAddressError,
  classifyAddress,
  normalHostname,
  pinnedLookup,
} from '#shared/net/addresses';
export type { Resolver, UrlPolicy } from '#shared/net/addresses';

/**
 * Which URLs a webhook may point at. Deployed: https only, never ngrok, and never a private,
 * loopback, link-local, metadata or otherwise non-public address, checked when the destination is
 * created and again at every request (DNS can change): the connection is pinned to the address that
 * passed the check, so a rebinding resolver cannot slip a private address in between.
 * Local mode (`npm start`, tests): plain http to loopback is allowed as well, and nothing else.
 */
const NGROK = /(^|\.)(ngrok\.io|ngrok\.app|ngrok-free\.app|ngrok\.dev|ngrok-free\.dev|ngrok\.pizza)$/;

/** Parses and checks the form of a webhook URL (not yet where it resolves). */
export function checkWebhookUrl(raw: string, policy: UrlPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidRequestError("'webhook_url' must be an absolute URL such as https://example.com/webhooks");
  }
  if (url.username || url.password) throw new InvalidRequestError("'webhook_url' must not contain credentials");
  if (NGROK.test(normalHostname(url.hostname)))
    throw new InvalidRequestError("'webhook_url' points at an ngrok tunnel; ngrok URLs are not accepted");
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (url.protocol === 'https:') return url;
  if (
    url.protocol === 'http:' &&
    policy.local &&
    (host === 'localhost' || (isIP(host) && classifyAddress(host) === 'loopback'))
  )
    return url;
  throw new InvalidRequestError(
    policy.local
      ? "'webhook_url' must use https (plain http is accepted only for 127.0.0.1 or localhost in local mode)"
      : "'webhook_url' must use https",
  );
}
