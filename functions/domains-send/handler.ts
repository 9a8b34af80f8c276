import { sendTransactional } from '#shared/domains/send';
import { parseMultipart } from '#shared/http/middleware/multipart';
import { ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(
  generated,
  {
    sendTransactional: async ({ app, params, body, files, headers }) => {
      const { result, replayed } = await sendTransactional(
        app,
        params.domain_name,
        body,
        files,
        headers['idempotency-key'],
      );
      return ok(result, replayed ? { headers: { 'idempotent-response': 'true' } } : {});
    },
  },
  { multipart: parseMultipart },
);
