import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import * as templates from '#shared/templates/templates';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  listApplicationTemplates: async ({ app, query }) => {
    const page = await templates.listApplicationTemplates(app.applicationId, pageSize(query.limit), query.page_token);
    return list(page.items, page.nextCursor);
  },
  createApplicationTemplate: async ({ app, body }) =>
    ok(await templates.createApplicationTemplate(app.applicationId, body)),
  renderInlineTemplate: async ({ body }) => ok(await templates.renderInlineTemplate(body)),
  getApplicationTemplate: async ({ app, params }) =>
    ok(await templates.getApplicationTemplate(app.applicationId, params.template_id)),
  updateApplicationTemplate: async ({ app, params, body }) =>
    ok(await templates.updateApplicationTemplate(app.applicationId, params.template_id, body)),
  deleteApplicationTemplate: async ({ app, params }) => {
    await templates.deleteApplicationTemplate(app.applicationId, params.template_id);
    return empty();
  },
  renderApplicationTemplate: async ({ app, params, body }) =>
    ok(await templates.renderApplicationTemplate(app.applicationId, params.template_id, body.variables, body.strict)),
  listTemplates: async ({ grant, query }) => {
    const page = await templates.listTemplates(grant, pageSize(query.limit), query.page_token);
    return list(page.items, page.nextCursor);
  },
  createTemplate: async ({ grant, body }) => ok(await templates.createTemplate(grant, body)),
  getTemplate: async ({ grant, params }) =>
    ok(templates.templateView(await templates.requireTemplate(grant.id, params.template_id))),
  updateTemplate: async ({ grant, params, body }) =>
    ok(await templates.updateTemplate(grant, params.template_id, body)),
  deleteTemplate: async ({ grant, params }) => {
    await templates.deleteTemplate(grant, params.template_id);
    return empty();
  },
  renderTemplate: async ({ grant, params, body }) =>
    ok(await templates.renderTemplateOfGrant(grant, params.template_id, body.variables, body.strict)),
  // The grant only scopes the request (it must exist and be the caller's): an inline body names no template.
  renderGrantInlineTemplate: async ({ body }) => ok(await templates.renderInlineTemplate(body)),
  listSignatures: async ({ grant, query }) => {
    const page = await templates.listSignatures(grant, pageSize(query.limit), query.page_token);
    return list(page.items, page.nextCursor);
  },
  createSignature: async ({ grant, body }) => ok(await templates.createSignature(grant, body)),
  getSignature: async ({ grant, params }) =>
    ok(templates.signatureView(await templates.requireSignature(grant.id, params.signature_id))),
  updateSignature: async ({ grant, params, body }) =>
    ok(await templates.updateSignature(grant, params.signature_id, body)),
  deleteSignature: async ({ grant, params }) => {
    await templates.deleteSignature(grant, params.signature_id);
    return empty();
  },
});
