/**
 * `npm run webhook-receiver`: a webhook endpoint for trying Switchboard on this machine (the README's
 * Webhooks section starts one). It listens on loopback only, answers the verification GET
 * (`?challenge=<value>`) with exactly the value, answers every delivery 200, and prints one line per
 * delivery saying whether its `x-service-signature` verifies:
 *
 *   npm run webhook-receiver -- --port 8080 --secret-file ./webhook-secret
 *   WEBHOOK_SECRET=… npm run webhook-receiver -- --port 8080
 *
 * The secret is shown once, when the destination is created, and creation needs the endpoint already
 * answering: so `--secret-file` is read again at every delivery, and may be written after the start.
 * The npm script `exec`s tsx, so the signal npm passes on reaches the receiver: `kill` of the npm
 * process started in the background stops it.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';

const USAGE =
  'usage: npm run webhook-receiver -- [--port 8080] [--secret SECRET | --secret-file PATH]   (or WEBHOOK_SECRET)';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '8080' }, secret: { type: 'string' }, 'secret-file': { type: 'string' } },
  strict: true,
});
const port = Number(values.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`--port must be a TCP port number\n${USAGE}\n`);
  process.exit(2);
}

/** The secret to check signatures with, if one is known yet. */
function currentSecret(): string | undefined {
  if (values.secret) return values.secret;
  if (values['secret-file']) {
    try {
      return readFileSync(values['secret-file'], 'utf8').trim() || undefined;
    } catch {
      return undefined; // not written yet
    }
  }
  return process.env.WEBHOOK_SECRET || undefined;
}

/** The check a receiver makes: hex HMAC-SHA256 of the exact body bytes (gzip bytes when compressed), compared in constant time. */
function signatureVerdict(raw: Buffer, signature: string | undefined): string {
  const secret = currentSecret();
  if (!secret) return 'signature not checked (no secret given)';
  if (!signature) return 'signature MISSING';
  const expected = Buffer.from(createHmac('sha256', secret).update(raw).digest('hex'));
  const given = Buffer.from(signature);
  return expected.length === given.length && timingSafeEqual(expected, given) ? 'signature valid' : 'signature INVALID';
}

function describe(raw: Buffer, gzipped: boolean): string {
  try {
    const event = JSON.parse((gzipped ? gunzipSync(raw) : raw).toString('utf8')) as {
      type?: string;
      id?: string;
      webhook_delivery_attempt?: number;
      data?: { object?: { id?: string } };
    };
    return `${event.type} ${event.id} attempt ${event.webhook_delivery_attempt} (object ${event.data?.object?.id ?? '-'})`;
  } catch {
    return `${raw.length} bytes that are not JSON`;
  }
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://receiver');
  const challenge = url.searchParams.get('challenge');
  if (req.method === 'GET' && challenge !== null) {
    // Exactly the value as the whole body, with a length (verification refuses chunked answers).
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': Buffer.byteLength(challenge) }).end(challenge);
    process.stdout.write(`verification: answered the challenge on ${url.pathname}\n`);
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const raw = Buffer.concat(chunks);
    const signature = req.headers['x-service-signature'];
    const gzipped = /gzip/i.test(String(req.headers['content-encoding'] ?? ''));
    process.stdout.write(
      `delivery: ${req.method} ${url.pathname} ${describe(raw, gzipped)}: ${signatureVerdict(raw, Array.isArray(signature) ? signature[0] : signature)}\n`,
    );
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': 2 }).end('ok');
  });
});

server.listen(port, '127.0.0.1', () => {
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  process.stdout.write(`listening on http://127.0.0.1:${bound}/\n`);
});
server.on('error', (error) => {
  process.stderr.write(`webhook receiver: ${error.message}\n`);
  process.exit(1);
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  });
}
