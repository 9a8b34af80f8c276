import type { promises as dns } from 'node:dns';
import { isIP } from 'node:net';
import { env } from '#shared/config';

/**
 * DNS reads of domain verification, through the resolvers the deployment names (DNS_RESOLVERS,
 * `host:port` each) or, when it names none, the system's. A lookup answers what the resolver said:
 * the records, no such name (NXDOMAIN), or that no resolver answered usefully; never an exception a
 * client would see as a 500.
 */
export type Lookup<T> =
  { kind: 'records'; records: T[] } | { kind: 'nxdomain' } | { kind: 'unavailable'; reason: string };

/** Each query waits this long per try, twice per server: a dead resolver costs a verification a few seconds at most. */
const TIMEOUT_MS = 2000;
const TRIES = 2;

const SERVERS = env.dnsResolvers();
// Checked at cold start: Node's resolver takes IP addresses only (`1.2.3.4`, `1.2.3.4:53`, `::1`, `[::1]:53`).
for (const server of SERVERS) {
  const host = server.startsWith('[') ? server.slice(1, server.indexOf(']')) : server.replace(/:\d+$/, '');
  if (!isIP(server) && !isIP(host))
    throw new Error(`DNS_RESOLVERS: '${server}' is not an IP address with an optional port`);
}
let resolver: Promise<dns.Resolver> | undefined;

/** Node's DNS module loads with the first verification, not at cold start (as shared/net/ does). */
function theResolver(): Promise<dns.Resolver> {
  resolver ??= import('node:dns').then(({ promises }) => {
    const r = new promises.Resolver({ timeout: TIMEOUT_MS, tries: TRIES });
    if (SERVERS.length) r.setServers(SERVERS);
    return r;
  });
  return resolver;
}

/** The resolver's error codes that mean "the name exists but holds no such record" or "no such name". */
const NO_DATA = new Set(['ENODATA']);
const NO_NAME = new Set(['ENOTFOUND']);

async function lookup<T>(query: (r: dns.Resolver) => Promise<T[]>): Promise<Lookup<T>> {
  try {
    return { kind: 'records', records: await query(await theResolver()) };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
    if (NO_DATA.has(code)) return { kind: 'records', records: [] };
    if (NO_NAME.has(code)) return { kind: 'nxdomain' };
    return { kind: 'unavailable', reason: describe(code) };
  }
}

function describe(code: string): string {
  switch (code) {
    case 'ECONNREFUSED':
      return 'the DNS resolver refused the connection';
    case 'ETIMEOUT':
      return 'the DNS resolver did not answer in time';
    case 'ESERVFAIL':
      return 'the DNS resolver could not reach the domain’s name servers (SERVFAIL)';
    case 'EREFUSED':
      return 'the DNS resolver refused the query';
    default:
      return `the DNS lookup failed (${code})`;
  }
}

/** TXT records of `name`, each record's strings joined (a long value is published as several strings). */
export const resolveTxt = (name: string): Promise<Lookup<string>> =>
  lookup(async (r) => (await r.resolveTxt(name)).map((chunks) => chunks.join('')));

/** MX records of `name`, exchanges lowercase without a trailing dot. */
export const resolveMx = (name: string): Promise<Lookup<{ exchange: string; priority: number }>> =>
  lookup(async (r) =>
    (await r.resolveMx(name)).map((mx) => ({
      exchange: mx.exchange.toLowerCase().replace(/\.$/, ''),
      priority: mx.priority,
    })),
  );
