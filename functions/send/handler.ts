import { ok } from '#shared/http/route';
import { parseMultipart } from '#shared/http/middleware/multipart';
import { httpApi } from '#shared/http/stack';
import { senderOf } from '#shared/providers/send';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  sendMessage: async ({ grant, body, files, headers }) => {
    const { result, replayed } = await senderOf(grant).send(grant, body, { files, idempotencyKey: headers['idempotency-key'] });
    return ok(result, replayed ? { headers: { 'idempotent-response': 'true' } } : {});
  },
}, { multipart: parseMultipart });
