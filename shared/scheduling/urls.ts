import { isIP } from 'node:net';
import { classifyAddress, normalHostname, type UrlPolicy } from '#shared/webhooks/urls';

/**
 * The links a configuration stores are handed to guests and organizers: the booking page sends the
 * browser to `confirmation_redirect_url`, emails carry the rescheduling, cancellation and organizer
 * confirmation URLs, and the booking's event carries the conferencing link. So they are https only
 * (a `javascript:` or `data:` link would run in the page or the mail client); in local mode (the
 * webhooks' policy, WEBHOOK_LOCAL_MODE) plain http to a loopback host is accepted as well.
 */
const loopback = (hostname: string) => {
  const host = normalHostname(hostname).replace(/^\[|\]$/g, '');
  return host === 'localhost' || (isIP(host) !== 0 && classifyAddress(host) === 'loopback');
};

/** What is wrong with a stored link of a configuration (named by `field`), or undefined when it may be stored. */
export function linkProblem(field: string, raw: string, policy: UrlPolicy): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `'${field}' must be an absolute https URL such as https://example.com/booked`;
  }
  if (url.protocol === 'https:') return undefined;
  if (url.protocol === 'http:' && policy.local && loopback(url.hostname)) return undefined;
  const scheme = url.protocol.replace(/:$/, '').slice(0, 40);
  return policy.local
    ? `'${field}' must use https (plain http only to localhost, 127.0.0.1 or ::1 in local mode); got a '${scheme}' URL${url.protocol === 'http:' ? ` to ${url.hostname}` : ''}`
    : `'${field}' must use https; got a '${scheme}' URL`;
}

/** Every stored link of a configuration, by field name (unset ones left out). */
export function configurationLinks(c: {
  scheduler?:
    | {
        confirmation_redirect_url?: string;
        rescheduling_url?: string;
        cancellation_url?: string;
        organizer_confirmation_url?: string;
      }
    | undefined;
  event_booking?: { conferencing?: { details?: { url?: string } } } | undefined;
}): [string, string][] {
  const links: [string, string | undefined][] = [
    ['scheduler.confirmation_redirect_url', c.scheduler?.confirmation_redirect_url],
    ['scheduler.rescheduling_url', c.scheduler?.rescheduling_url],
    ['scheduler.cancellation_url', c.scheduler?.cancellation_url],
    ['scheduler.organizer_confirmation_url', c.scheduler?.organizer_confirmation_url],
    ['event_booking.conferencing.details.url', c.event_booking?.conferencing?.details?.url],
  ];
  return links.filter((l): l is [string, string] => l[1] !== undefined);
}
