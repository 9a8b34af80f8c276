import { ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { draftSenderOf } from '#shared/registries/draft-sending';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  sendDraft: async ({ grant, params, body }) => ok(await draftSenderOf(grant).send(grant, params.draft_id, body)),
});
