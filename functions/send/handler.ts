import type { OutgoingInput } from '#shared/agent/send';
import { requestHash } from '#shared/agent/send';
import { ok } from '#shared/http/route';
import { parseMultipart } from '#shared/http/middleware/multipart';
import { httpApi } from '#shared/http/stack';
import { senderOf } from '#shared/providers/send';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  sendMessage: async ({ grant, body, files, rawBody, headers, event }) => {
    const { result, replayed } = await senderOf(grant).send(grant, body as OutgoingInput, {
      files,
      idempotencyKey: headers['idempotency-key'],
      requestHash: requestHash('POST', event.rawPath, rawBody),
    });
    return ok(result, replayed ? { headers: { 'idempotent-response': 'true' } } : {});
  },
}, { multipart: parseMultipart });
