import { ok } from '#shared/http/route';
import { parseMultipart } from '#shared/http/middleware/multipart';
import { httpApi } from '#shared/http/stack';
import { senderOf } from '#shared/providers/send';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  sendMessage: async ({ grant, body, files, headers }) => {
    const { result, replayed } = await senderOf(grant).send(grant, body, { files, idempotencyKey: headers['idempotency-key'] });
    // The published contract answers a send with the grant's id beside `data`.
    return ok(result, { envelope: { grant_id: grant.id }, ...(replayed ? { headers: { 'idempotent-response': 'true' } } : {}) });
  },
}, { multipart: parseMultipart });
