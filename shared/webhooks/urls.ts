import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import { InvalidRequestError } from '#shared/http/errors';

/**
 * Which URLs a webhook may point at. Deployed: https only, never ngrok, and never a private,
 * loopback, link-local, metadata or otherwise non-public address, checked when the destination is
 * created and again at every request (DNS can change): the connection is pinned to the address that
 * passed the check, so a rebinding resolver cannot slip a private address in between.
 * Local mode (`npm start`, tests): plain http to loopback is allowed as well, and nothing else.
 */
const NON_PUBLIC = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  NON_PUBLIC.addSubnet(net, prefix, 'ipv4');
}
// No ::ffff:0:0/96 here: BlockList matches plain IPv4 addresses against that rule. IPv4-mapped
// addresses are unwrapped and judged as IPv4 in classifyAddress instead.
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  NON_PUBLIC.addSubnet(net, prefix, 'ipv6');
}
const LOOPBACK = new BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

const NGROK = /(^|\.)(ngrok\.io|ngrok\.app|ngrok-free\.app|ngrok\.dev|ngrok-free\.dev|ngrok\.pizza)$/i;

type AddressVerdict = 'public' | 'loopback' | 'private';

export function classifyAddress(address: string): AddressVerdict {
  const family = isIP(address);
  if (family === 0) return 'private';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  // IPv4-mapped IPv6 (::ffff:10.0.0.1) is judged as the IPv4 address it maps.
  const mapped = type === 'ipv6' ? /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1] : undefined;
  if (mapped) return classifyAddress(mapped);
  if (LOOPBACK.check(address, type)) return 'loopback';
  return NON_PUBLIC.check(address, type) ? 'private' : 'public';
}

export interface UrlPolicy {
  /** Local development: http to loopback allowed. */
  local: boolean;
}

/** Parses and checks the form of a webhook URL (not yet where it resolves). */
export function checkWebhookUrl(raw: string, policy: UrlPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new InvalidRequestError("'webhook_url' must be an absolute URL such as https://example.com/webhooks");
  }
  if (url.username || url.password) throw new InvalidRequestError("'webhook_url' must not contain credentials");
  if (NGROK.test(url.hostname)) throw new InvalidRequestError("'webhook_url' points at an ngrok tunnel; ngrok URLs are not accepted");
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (url.protocol === 'https:') return url;
  if (url.protocol === 'http:' && policy.local && (host === 'localhost' || (isIP(host) && classifyAddress(host) === 'loopback'))) return url;
  throw new InvalidRequestError(
    policy.local ? "'webhook_url' must use https (plain http is accepted only for 127.0.0.1 or localhost in local mode)" : "'webhook_url' must use https",
  );
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type Resolver = (hostname: string) => Promise<string[]>;

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    dnsLookup(hostname, { all: true, verbatim: true }, (error, addresses) => (error ? reject(error) : resolve(addresses.map((a) => a.address)))),
  );

export class BlockedAddressError extends Error {
  constructor(readonly hostname: string, readonly address: string) {
    super(`${hostname} resolves to ${address}, which is not a public address`);
    this.name = 'BlockedAddressError';
  }
}

/** The addresses a host may be reached at under the policy; throws BlockedAddressError otherwise. */
export async function allowedAddresses(hostname: string, policy: UrlPolicy, resolver: Resolver = systemResolver): Promise<string[]> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : await resolver(host);
  if (!addresses.length) throw new BlockedAddressError(host, '(no address)');
  for (const address of addresses) {
    const verdict = classifyAddress(address);
    if (verdict === 'public') continue;
    if (verdict === 'loopback' && policy.local) continue;
    throw new BlockedAddressError(host, address);
  }
  return addresses;
}

/**
 * A `lookup` for http(s).request that resolves, checks and pins: the socket connects only to an
 * address that passed the policy at this very moment.
 */
export function pinnedLookup(policy: UrlPolicy, resolver: Resolver = systemResolver) {
  return (hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback) => {
    allowedAddresses(hostname, policy, resolver).then(
      (addresses) => {
        const first = addresses[0]!;
        if (options.all) callback(null, addresses.map((address) => ({ address, family: isIP(address) })));
        else callback(null, first, isIP(first));
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
