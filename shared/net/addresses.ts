import type { LookupAddress } from 'node:dns';
import { isIP, type BlockList } from 'node:net';

/**
 * Where the service may open outgoing connections to addresses that a customer or a configuration
 * names (webhook receivers, booking redirects, self-hosted authorization servers). Deployed: never a
 * private, loopback, link-local, metadata or otherwise non-public address, checked at every request
 * (DNS can change): the connection is pinned to the address that passed the check, so a rebinding
 * resolver cannot slip a private address in between. Local mode (`npm start`, tests): loopback is
 * allowed as well, and nothing else.
 */
/**
 * The address ranges, made on first use: Node's BlockList (and the DNS module below) load internal
 * modules that the many requests never opening an outgoing connection need not pay for at cold start.
 */
let ranges: { nonPublic: BlockList; loopbackV4: BlockList } | undefined;
function addressRanges() {
  if (ranges) return ranges;
  const { BlockList } = process.getBuiltinModule('node:net');
  const nonPublic = new BlockList();
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
    nonPublic.addSubnet(net, prefix, 'ipv4');
  }
  const loopbackV4 = new BlockList();
  loopbackV4.addSubnet('127.0.0.0', 8, 'ipv4');
  return (ranges = { nonPublic, loopbackV4 });
}

export type AddressVerdict = 'public' | 'loopback' | 'private';

/**
 * The eight 16-bit groups of an IPv6 address in any spelling (compressed, leading zeros, upper case,
 * an embedded dotted quad, a zone ID), or undefined if it is not one. The WHATWG URL parser
 * canonicalises it first, so every spelling is judged the same.
 */
function ipv6Groups(address: string): number[] | undefined {
  let canonical: string;
  try {
    canonical = new URL(`http://[${address.replace(/%.*$/s, '')}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  const [head, tail] = canonical.split('::') as [string, string | undefined];
  const parse = (part: string | undefined) => (part ? part.split(':').map((g) => parseInt(g, 16)) : []);
  const left = parse(head);
  const right = parse(tail);
  const groups =
    tail === undefined ? left : [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff) ? groups : undefined;
}

const v4From = (hi: number, lo: number) => `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;

/**
 * IPv6 is public only inside global unicast (2000::/3), outside the ranges in it that are special,
 * and outside every form that embeds or routes to an IPv4 address: IPv4-mapped addresses
 * (::ffff:0:0/96) are judged as the IPv4 address they carry; IPv4-compatible (::/96), IPv4-translated
 * (::ffff:0:0:0/96), NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4 (2002::/16) and Teredo (2001::/32)
 * are refused whatever they embed: a gateway on the path would turn them into IPv4 traffic that was
 * never checked, and no webhook receiver is reachable only there.
 */
function classifyIpv6(groups: number[]): AddressVerdict {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = groups as [number, number, number, number, number, number, number, number];
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0) {
    if (g5 === 0xffff) return classifyAddress(v4From(g6, g7));
    if (g5 === 0 && g6 === 0 && g7 === 1) return 'loopback';
    return 'private'; // ::, and IPv4-compatible ::a.b.c.d
  }
  if ((g0 & 0xe000) !== 0x2000) return 'private'; // ::ffff:0:0:0/96, 64:ff9b::/96 and /48, 100::/64, fc00::/7, fe80::/10, fec0::/10, ff00::/8, …
  if (g0 === 0x2002) return 'private'; // 6to4
  if (g0 === 0x2001 && g1 < 0x0200) return 'private'; // IETF protocol assignments (2001::/23): Teredo, benchmarking, ORCHID, …
  if (g0 === 0x2001 && g1 === 0x0db8) return 'private'; // documentation
  if (g0 === 0x3fff && g1 < 0x1000) return 'private'; // documentation (3fff::/20)
  return 'public';
}

export function classifyAddress(address: string): AddressVerdict {
  const family = isIP(address.replace(/%.*$/s, ''));
  if (family === 4) {
    const { loopbackV4, nonPublic } = addressRanges();
    if (loopbackV4.check(address, 'ipv4')) return 'loopback';
    return nonPublic.check(address, 'ipv4') ? 'private' : 'public';
  }
  const groups = family === 6 ? ipv6Groups(address) : undefined;
  return groups ? classifyIpv6(groups) : 'private';
}

/**
 * A hostname as DNS and the ngrok ban see it: lower case, IDN in ASCII and percent escapes decoded
 * (the URL parser did those), without the trailing dot of a fully qualified name (`abc.ngrok.io.`).
 */
export const normalHostname = (hostname: string) => hostname.toLowerCase().replace(/\.+$/, '');

export interface UrlPolicy {
  /** Local development: loopback addresses allowed (and, where the caller allows it, plain http to them). */
  local: boolean;
  /** Only loopback addresses, whatever else the policy allows (plain http in local mode never leaves the machine). */
  loopbackOnly?: boolean;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
export type Resolver = (hostname: string) => Promise<string[]>;

const systemResolver: Resolver = (hostname) =>
  new Promise((resolve, reject) =>
    process
      .getBuiltinModule('node:dns')
      .lookup(hostname, { all: true, verbatim: true }, (error, addresses) =>
        error ? reject(error) : resolve(addresses.map((a) => a.address)),
      ),
  );

export class BlockedAddressError extends Error {
  constructor(
    readonly hostname: string,
    readonly address: string,
    why = 'which is not a public address',
  ) {
    super(`${hostname} resolves to ${address}, ${why}`);
    this.name = 'BlockedAddressError';
  }
}

/** The addresses a host may be reached at under the policy; throws BlockedAddressError otherwise. */
export async function allowedAddresses(
  hostname: string,
  policy: UrlPolicy,
  resolver: Resolver = systemResolver,
): Promise<string[]> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : await resolver(host);
  if (!addresses.length) throw new BlockedAddressError(host, '(no address)');
  for (const address of addresses) {
    const verdict = classifyAddress(address);
    if (verdict === 'loopback' && policy.local) continue;
    if (policy.loopbackOnly)
      throw new BlockedAddressError(
        host,
        address,
        verdict === 'loopback' ? 'and loopback is allowed only in local mode' : 'which is not a loopback address',
      );
    if (verdict === 'public') continue;
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
        if (options.all)
          callback(
            null,
            addresses.map((address) => ({ address, family: isIP(address) })),
          );
        else callback(null, first, isIP(first));
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };
}
