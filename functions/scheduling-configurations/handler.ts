import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { resolveGrant } from '#shared/grants/resolve';
import {
  configurationView,
  createConfiguration,
  deleteConfiguration,
  listConfigurations,
  requireConfiguration,
  updateConfiguration,
} from '#shared/scheduling/configurations';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listGrantConfigurations: async ({ app, grant, query }) => {
    const page = await listConfigurations(app, query, grant);
    return list(page.items, page.nextCursor);
  },
  createGrantConfiguration: async ({ app, grant, body }) =>
    ok(await createConfiguration(app, grant, body), { status: 201 }),
  getGrantConfiguration: async ({ app, grant, params }) =>
    ok(configurationView(await requireConfiguration(app.applicationId, params.configuration_id, grant))),
  updateGrantConfiguration: async ({ app, grant, params, body }) =>
    ok(
      await updateConfiguration(
        app,
        grant,
        await requireConfiguration(app.applicationId, params.configuration_id, grant),
        body,
      ),
    ),
  deleteGrantConfiguration: async ({ app, grant, params }) => {
    await deleteConfiguration(await requireConfiguration(app.applicationId, params.configuration_id, grant));
    return empty();
  },
  listConfigurations: async ({ app, query }) => {
    const page = await listConfigurations(
      app,
      query,
      query.grant_id !== undefined ? await resolveGrant(app, query.grant_id) : undefined,
    );
    return list(page.items, page.nextCursor);
  },
  createConfiguration: async ({ app, body }) => {
    const { grant_id, ...rest } = body;
    return ok(await createConfiguration(app, await resolveGrant(app, grant_id), rest), { status: 201 });
  },
  getConfiguration: async ({ app, params }) =>
    ok(configurationView(await requireConfiguration(app.applicationId, params.configuration_id))),
  updateConfiguration: async ({ app, params, body }) => {
    const current = await requireConfiguration(app.applicationId, params.configuration_id);
    return ok(await updateConfiguration(app, await resolveGrant(app, current.grant_id), current, body));
  },
  deleteConfiguration: async ({ app, params }) => {
    await deleteConfiguration(await requireConfiguration(app.applicationId, params.configuration_id));
    return empty();
  },
});
