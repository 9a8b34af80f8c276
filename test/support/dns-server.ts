import dns2 from 'dns2';

/**
 * A real DNS server on loopback (dns2, UDP and TCP on one free port) serving the records a test puts
 * in its zone: a name with no records at all is NXDOMAIN, a name with records of other types only is
 * an empty answer (NODATA). Point the code under test at `address` (`127.0.0.1:<port>`, the form of
 * DNS_RESOLVERS).
 */
export type ServedRecord =
  | { type: 'TXT'; value: string }
  | { type: 'MX'; exchange: string; priority?: number }
  | { type: 'CNAME'; target: string };

export interface DnsServer {
  address: string;
  /** Replaces the records of `name` (none: the name no longer exists). */
  set(name: string, records: ServedRecord[]): void;
  /** Every query the server answered, as `<name> <type>`. */
  queries: string[];
  close(): Promise<void>;
}

const { Packet } = dns2;
const TTL = 1;

/** A TXT value longer than 255 octets is published as several character-strings (RFC 7208 §3.3). */
const chunks = (value: string) => value.match(/.{1,255}/gs) ?? [''];

/** An answer record: dns2's type also names the encoder the packet writer adds to each. */
const answer = (fields: Omit<dns2.Packet.Resource, 'toBuffer'>) => fields as dns2.Packet.Resource;

export async function startDnsServer(): Promise<DnsServer> {
  const zone = new Map<string, ServedRecord[]>();
  const queries: string[] = [];
  const handle: dns2.DnsHandler = (request, send) => {
    const response = Packet.createResponseFromRequest(request);
    const [question] = request.questions;
    if (!question) return void send(response);
    const name = question.name.toLowerCase().replace(/\.$/, '');
    const typeName = Object.entries(Packet.TYPE).find(([, code]) => code === question.type)?.[0] ?? 'UNKNOWN';
    queries.push(`${name} ${typeName}`);
    const records = zone.get(name);
    if (!records) {
      response.header.rcode = Packet.RCODE.NXDOMAIN;
      return void send(response);
    }
    for (const record of records) {
      if (record.type === 'TXT' && question.type === Packet.TYPE.TXT)
        response.answers.push(
          answer({
            name: question.name,
            type: Packet.TYPE.TXT,
            class: Packet.CLASS.IN,
            ttl: TTL,
            data: [...chunks(record.value)],
          }),
        );
      if (record.type === 'MX' && question.type === Packet.TYPE.MX)
        response.answers.push(
          answer({
            name: question.name,
            type: Packet.TYPE.MX,
            class: Packet.CLASS.IN,
            ttl: TTL,
            exchange: record.exchange,
            priority: record.priority ?? 10,
          }),
        );
      if (record.type === 'CNAME' && question.type === Packet.TYPE.CNAME)
        response.answers.push(
          answer({
            name: question.name,
            type: Packet.TYPE.CNAME,
            class: Packet.CLASS.IN,
            ttl: TTL,
            domain: record.target,
          }),
        );
    }
    return void send(response);
  };
  // UDP on a free port, then TCP on the same one: a resolver retries a truncated answer over TCP there.
  const udpServer = dns2.createServer({ udp: true, handle });
  const { udp } = await udpServer.listen({ udp: { port: 0, address: '127.0.0.1' } });
  const port = udp!.port;
  const tcpServer = dns2.createServer({ tcp: true, handle });
  let closed: Promise<void> | undefined;
  await tcpServer.listen({ tcp: { port, address: '127.0.0.1' } });
  return {
    address: `127.0.0.1:${port}`,
    set(name, records) {
      const key = name.toLowerCase();
      if (records.length) zone.set(key, records);
      else zone.delete(key);
    },
    queries,
    // Once: a test may stop the server early to see the resolver down.
    close: () => (closed ??= Promise.all([udpServer.close(), tcpServer.close()]).then(() => undefined)),
  };
}
