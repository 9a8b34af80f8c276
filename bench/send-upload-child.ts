import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { buildEvent, lambdaContext } from '../scripts/local-stack/api-gateway-event';

/**
 * The send and attachments functions in a process of their own, as Lambda runs each: the parent
 * (bench/send-upload.ts) asks for one request at a time over IPC, and gets the answer with the
 * memory the function took while serving it: the largest growth of heap plus external memory
 * (Buffers live outside the heap) over the figure just before the request (after a full garbage
 * collection), and the growth of RSS, sampled every 2 ms. With `live`, each sample follows a full
 * collection: what the function holds, without the garbage it has not yet collected (slower: for
 * memory, not for time). Nothing else runs in this process, so what it measures is the function's own.
 */
interface Invoke {
  fn: 'send' | 'attachments';
  routeKey: string;
  params: Record<string, string>;
  path: string;
  apiKey: string;
  body: unknown;
  live?: boolean;
}

const handlers = {
  send: () => import('#functions/send/handler'),
  attachments: () => import('#functions/attachments/handler'),
};

const gc = (globalThis as { gc?: () => void }).gc;

async function invoke(request: Invoke) {
  const { handler } = await handlers[request.fn]();
  const body = Buffer.from(JSON.stringify(request.body));
  const event = buildEvent(
    { routeKey: request.routeKey, params: request.params },
    {
      method: 'POST',
      url: request.path,
      headers: {
        authorization: `Bearer ${request.apiKey}`,
        'content-type': 'application/json',
        'content-length': String(body.length),
      },
      body,
      sourceIp: '127.0.0.1',
    },
  );
  gc?.();
  const before = process.memoryUsage();
  let peak = 0;
  let peakRss = 0;
  const sample = () => {
    if (request.live) gc?.();
    const now = process.memoryUsage();
    peak = Math.max(peak, now.heapUsed + now.external - before.heapUsed - before.external);
    peakRss = Math.max(peakRss, now.rss - before.rss);
  };
  const timer = setInterval(sample, request.live ? 5 : 2);
  const started = performance.now();
  try {
    const result = (await handler(
      event as never,
      lambdaContext(request.fn, 60_000),
    )) as APIGatewayProxyStructuredResultV2;
    const ms = performance.now() - started;
    sample();
    return { status: result.statusCode, body: result.body, ms, peak, peakRss };
  } finally {
    clearInterval(timer);
  }
}

process.on('message', (message: Invoke & { id: number }) => {
  invoke(message).then(
    (answer) => process.send!({ id: message.id, ...answer }),
    (error: unknown) => process.send!({ id: message.id, error: String((error as Error).stack ?? error) }),
  );
});
process.send!({ ready: true });
