import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { startReceiver, type Receiver } from '../support/receiver';

/**
 * The destinations API as deployed (WEBHOOK_LOCAL_MODE=false): https only, and no private,
 * loopback, link-local or metadata address, refused before any request is made. Nothing here may
 * leave the machine: every URL is refused before a connection, which a raw TCP listener on
 * loopback checks where it can.
 */
let gateway: Gateway;
let api: ApiClient;
let receiver: Receiver;
let tcp: Server;
let tcpPort: number;
/** Remote ports of the connections the raw TCP listener accepted, in order. */
let tcpConnections: number[] = [];

function expectInvalid(r: ApiResponse, message: string | RegExp) {
  expect(r.status, r.text).toBe(400);
  expect(r.body.error.type).toBe('invalid_request_error');
  if (typeof message === 'string') expect(r.body.error.message).toBe(message);
  else expect(r.body.error.message).toMatch(message);
}

async function expectNoWebhooks() {
  const list = await api.get('/v3/webhooks');
  expect(list.status).toBe(200);
  expect(list.body.data).toEqual([]);
}

beforeAll(async () => {
  // Read when the webhook modules load (at the gateway's first webhook request).
  process.env.WEBHOOK_LOCAL_MODE = 'false';
  delete process.env.WEBHOOK_EGRESS_IPS;
  gateway = await startGateway();
  receiver = await startReceiver();
  // A raw TCP listener: any connection attempt at all (TLS or not) is counted.
  tcp = createServer((socket) => {
    tcpConnections.push(socket.remotePort!);
    socket.destroy();
  });
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  tcpPort = (tcp.address() as AddressInfo).port;
});

beforeEach(async () => {
  const app = await makeApplication();
  api = apiClient(gateway.url, app.apiKey);
  tcpConnections = [];
});

/**
 * Connects to the raw TCP listener from here and waits until it has accepted that connection. One
 * listening socket accepts in the order connections were made, so any connection attempted before
 * (by a request already answered) has been counted by then. Returns the sentinel's port.
 */
async function tcpSentinel(): Promise<number> {
  const socket = connect(tcpPort, '127.0.0.1');
  await once(socket, 'connect');
  const port = socket.localPort!;
  socket.destroy();
  await expect.poll(() => tcpConnections, { timeout: 10_000, interval: 10 }).toContain(port);
  return port;
}

afterAll(async () => {
  await receiver?.close();
  await new Promise<void>((resolve) => (tcp ? tcp.close(() => resolve()) : resolve()));
  await gateway?.close();
});

describe('deployed mode', () => {
  it('refuses plain http to loopback, even with a receiver listening, and sends no challenge', async () => {
    const response = await api.post('/v3/webhooks', { webhook_url: receiver.url, trigger_types: ['message.created'] });
    expectInvalid(response, "'webhook_url' must use https");
    expect(receiver.challenges).toEqual([]);
    await expectNoWebhooks();
  });

  it.each([
    'https://10.0.0.1/h',
    'https://172.16.5.4/h',
    'https://192.168.1.1/h',
    'https://127.0.0.1/h',
    'https://[::1]/h',
    'https://169.254.169.254/latest',
    'https://[fd00:ec2::254]/',
    'https://[::ffff:10.0.0.1]/h',
    'https://[::ffff:127.0.0.1]/h',
    'https://[fe80::1]/h',
    'https://100.64.0.1/h',
    'https://0.0.0.0/h',
    'https://localhost/h',
  ])('refuses %s as not a public address', async (url) => {
    const response = await api.post('/v3/webhooks', { webhook_url: url, trigger_types: ['message.created'] });
    expectInvalid(
      response,
      /^'webhook_url' is not reachable as a public address: \S+ resolves to \S+, which is not a public address$/,
    );
    await expectNoWebhooks();
  });

  it('names the host and the refused address', async () => {
    expectInvalid(
      await api.post('/v3/webhooks', {
        webhook_url: 'https://169.254.169.254/latest/meta-data/',
        trigger_types: ['message.created'],
      }),
      "'webhook_url' is not reachable as a public address: 169.254.169.254 resolves to 169.254.169.254, which is not a public address",
    );
    expectInvalid(
      await api.post('/v3/webhooks', { webhook_url: 'https://localhost/h', trigger_types: ['message.created'] }),
      /^'webhook_url' is not reachable as a public address: localhost resolves to (127\.0\.0\.1|::1), which is not a public address$/,
    );
  });

  it.each(['https://127.0.0.1:{port}/h', 'https://localhost:{port}/h', 'https://[::ffff:127.0.0.1]:{port}/h'])(
    'refuses %s before any connection is made',
    async (template) => {
      // Act
      const response = await api.post('/v3/webhooks', {
        webhook_url: template.replace('{port}', String(tcpPort)),
        trigger_types: ['message.created'],
      });

      // Assess
      expectInvalid(response, /^'webhook_url' is not reachable as a public address: /);
      const sentinel = await tcpSentinel();
      expect(tcpConnections).toEqual([sentinel]);
    },
  );

  it.each([
    'https://abc.ngrok-free.app/x',
    'https://x.ngrok.io/y',
    'https://x.ngrok.app/',
    'https://deep.sub.ngrok-free.dev/hook',
  ])('refuses the ngrok URL %s', async (url) => {
    expectInvalid(
      await api.post('/v3/webhooks', { webhook_url: url, trigger_types: ['message.created'] }),
      "'webhook_url' points at an ngrok tunnel; ngrok URLs are not accepted",
    );
    await expectNoWebhooks();
  });

  it('applies the same rules to send-test-event URLs', async () => {
    expectInvalid(
      await api.post('/v3/webhooks/send-test-event', { trigger_type: 'message.created', webhook_url: receiver.url }),
      "'webhook_url' must use https",
    );
    expectInvalid(
      await api.post('/v3/webhooks/send-test-event', {
        trigger_type: 'message.created',
        webhook_url: 'https://abc.ngrok-free.app/x',
      }),
      /ngrok/,
    );
    expect(receiver.received).toHaveLength(0);
  });

  it('publishes no egress addresses when WEBHOOK_EGRESS_IPS is unset', async () => {
    const response = await api.get('/v3/webhooks/ip-addresses');
    expect(response.status).toBe(200);
    expect(response.body.data).toEqual({ ip_addresses: [], updated_at: 0 });
  });
});
