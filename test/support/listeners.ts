import { readFileSync } from 'node:fs';

/**
 * The addresses a TCP port listens on, read from the kernel's socket tables (/proc/net/tcp, tcp6):
 * no connection is made to any address.
 */
export function listeners(port: number): string[] {
  const found: string[] = [];
  for (const [file, v6] of [
    ['/proc/net/tcp', false],
    ['/proc/net/tcp6', true],
  ] as const) {
    let table = '';
    try {
      table = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of table.split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (!local || state !== '0A') continue; // 0A: LISTEN
      const [hex, portHex] = local.split(':') as [string, string];
      if (parseInt(portHex, 16) !== port) continue;
      found.push(v6 ? ipv6(hex) : ipv4(hex));
    }
  }
  return found;
}

/** /proc/net/tcp writes addresses as little-endian 32-bit words in hex. */
const word = (hex: string) => (hex.match(/../g) ?? []).reverse().map((b) => parseInt(b, 16));
const ipv4 = (hex: string) => word(hex).join('.');
function ipv6(hex: string) {
  const bytes = [0, 8, 16, 24].flatMap((i) => word(hex.slice(i, i + 8)));
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 255 && bytes[11] === 255)
    return `::ffff:${bytes.slice(12).join('.')}`;
  return bytes.every((b, i) => b === (i === 15 ? 1 : 0))
    ? '::1'
    : bytes.every((b) => b === 0)
      ? '::'
      : bytes.map((b) => b.toString(16)).join(',');
}

/** What loopback-only listeners show. */
export const LOOPBACK_LISTENERS = ['127.0.0.1', '::ffff:127.0.0.1', '::1'];
