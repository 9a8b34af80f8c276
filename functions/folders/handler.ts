import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { foldersOf } from '#shared/registries/folders';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listFolders: async ({ grant, query }) => {
    const page = await foldersOf(grant).list(grant, query, pageSize(query.limit));
    return list(page.items, page.nextCursor);
  },
  createFolder: async ({ grant, body }) => ok(await foldersOf(grant).create(grant, body)),
  getFolder: async ({ grant, params }) => ok(await foldersOf(grant).get(grant, params.folder_id)),
  updateFolder: async ({ grant, params, body }) => ok(await foldersOf(grant).update(grant, params.folder_id, body)),
  deleteFolder: async ({ grant, params }) => {
    await foldersOf(grant).delete(grant, params.folder_id);
    return empty();
  },
});
