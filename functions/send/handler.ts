import { ok } from '#shared/http/route';
import { parseMultipart } from '#shared/http/middleware/multipart';
import { httpApi } from '#shared/http/stack';
import { senderOf } from '#shared/registries/send';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(
  generated,
  {
    sendMessage: async ({ grant, body, files, headers, requestId }) => {
      const { result, replayed, scheduled } = await senderOf(grant).send(grant, body, {
        files,
        idempotencyKey: headers['idempotency-key'],
        requestId,
      });
      // The published contract answers a send with the grant's ID beside `data`, and a scheduled one
      // with 202 and its schedule_id there too.
      return ok(result, {
        ...(scheduled ? { status: 202 } : {}),
        envelope: { grant_id: grant.id, ...(scheduled ? { schedule_id: result.schedule_id } : {}) },
        ...(replayed ? { headers: { 'idempotent-response': 'true' } } : {}),
      });
    },
  },
  { multipart: parseMultipart },
);
