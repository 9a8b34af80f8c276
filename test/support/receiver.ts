import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A real HTTP receiver for webhook tests on loopback: answers verification challenges, records every
 * POST with its raw bytes and headers, and behaves as scripted (status codes, Retry-After, delays,
 * connection resets, huge bodies) so each failure mode can be produced for real.
 */
export interface Received {
  headers: IncomingMessage['headers'];
  raw: Buffer;
  at: number;
  /** When it arrived, as a place in one count of the arrivals and ends of every receiver in this process: order without timing. */
  seq: number;
  /** Its place in the same count once the exchange ended (answer sent, or connection closed); unset while still open. */
  endedSeq?: number;
}

let sequence = 0;

export type Behaviour =
  | { status: number; body?: string; headers?: Record<string, string> }
  | { hang: true }
  | { reset: true }
  | { hugeBody: number };

export interface Receiver {
  url: string;
  received: Received[];
  challenges: string[];
  /** Behaviour of the next POSTs, in order; after the script the default applies. */
  script(...behaviours: Behaviour[]): void;
  setDefault(behaviour: Behaviour): void;
  /** How the verification GET is answered (default: echo the challenge). */
  onChallenge(answer: (challenge: string, res: ServerResponse) => void): void;
  waitFor(count: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export async function startReceiver(path = '/hook'): Promise<Receiver> {
  const received: Received[] = [];
  const challenges: string[] = [];
  const queue: Behaviour[] = [];
  let fallback: Behaviour = { status: 200, body: 'ok' };
  let challengeAnswer = (challenge: string, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(challenge) }).end(challenge);
  };
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.searchParams.has('challenge')) {
      const challenge = url.searchParams.get('challenge')!;
      challenges.push(challenge);
      challengeAnswer(challenge, res);
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: Received = { headers: req.headers, raw: Buffer.concat(chunks), at: Date.now(), seq: ++sequence };
      received.push(entry);
      res.once('close', () => (entry.endedSeq ??= ++sequence));
      const behaviour = queue.shift() ?? fallback;
      if ('hang' in behaviour) return;
      if ('reset' in behaviour) {
        req.socket.destroy();
        return;
      }
      if ('hugeBody' in behaviour) {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(64 * 1024, 120);
        let sent = 0;
        const pump = () => {
          while (sent < behaviour.hugeBody) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        res.on('error', () => undefined);
        pump();
        return;
      }
      res.writeHead(behaviour.status, { 'content-type': 'text/plain', ...behaviour.headers }).end(behaviour.body ?? '');
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${path}`,
    received,
    challenges,
    script: (...behaviours) => queue.push(...behaviours),
    setDefault: (behaviour) => (fallback = behaviour),
    onChallenge: (answer) => (challengeAnswer = answer),
    waitFor: async (count, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      return received;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
