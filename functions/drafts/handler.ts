import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { parseMultipart } from '#shared/http/middleware/multipart';
import { httpApi } from '#shared/http/stack';
import { draftsOf } from '#shared/registries/drafts';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(
  generated,
  {
    listDrafts: async ({ grant, query }) => {
      const page = await draftsOf(grant).list(grant, query, pageSize(query.limit));
      return list(page.items, page.nextCursor);
    },
    createDraft: async ({ grant, body, files }) => ok(await draftsOf(grant).create(grant, body, files)),
    getDraft: async ({ grant, params }) => ok(await draftsOf(grant).get(grant, params.draft_id)),
    updateDraft: async ({ grant, params, body, files }) =>
      ok(await draftsOf(grant).update(grant, params.draft_id, body, files)),
    deleteDraft: async ({ grant, params }) => {
      await draftsOf(grant).delete(grant, params.draft_id);
      return empty();
    },
  },
  { multipart: parseMultipart },
);
