import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import * as templates from '#shared/templates/templates';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
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
    ok(await templates.renderStoredTemplate(grant.id, { id: params.template_id, variables: body.variables })),
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
