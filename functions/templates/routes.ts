import { PageQuery, SelectQuery } from '#schemas/common';
import { CreateSignatureBody, CreateTemplateBody, RenderTemplateBody, RenderedTemplateObject, SignatureObject, TemplateObject, UpdateSignatureBody, UpdateTemplateBody } from '#schemas/templates';
import type { RouteTable } from '#shared/http/route';

/** Grant-level templates and signatures (stored by Switchboard for every kind of grant). */
export const routes = {
  listTemplates: { method: 'GET', path: '/v3/grants/{grant_id}/templates', summary: 'List templates', query: PageQuery, response: TemplateObject, responseKind: 'list', select: true },
  createTemplate: { method: 'POST', path: '/v3/grants/{grant_id}/templates', summary: 'Create a template (mustache, handlebars or twig)', body: CreateTemplateBody, response: TemplateObject },
  getTemplate: { method: 'GET', path: '/v3/grants/{grant_id}/templates/{template_id}', summary: 'Get one template', query: SelectQuery, response: TemplateObject, select: true },
  updateTemplate: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/templates/{template_id}',
    summary: 'Update a template',
    query: SelectQuery,
    body: UpdateTemplateBody,
    response: TemplateObject,
    select: true,
  },
  deleteTemplate: { method: 'DELETE', path: '/v3/grants/{grant_id}/templates/{template_id}', summary: 'Delete a template', responseKind: 'empty' },
  renderTemplate: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/templates/{template_id}/render',
    summary: 'Render a template with variables',
    body: RenderTemplateBody,
    response: RenderedTemplateObject,
  },
  listSignatures: { method: 'GET', path: '/v3/grants/{grant_id}/signatures', summary: 'List signatures', query: PageQuery, response: SignatureObject, responseKind: 'list', select: true },
  createSignature: { method: 'POST', path: '/v3/grants/{grant_id}/signatures', summary: 'Create a signature', body: CreateSignatureBody, response: SignatureObject, status: 201 },
  getSignature: { method: 'GET', path: '/v3/grants/{grant_id}/signatures/{signature_id}', summary: 'Get one signature', query: SelectQuery, response: SignatureObject, select: true },
  updateSignature: {
    method: 'PUT',
    path: '/v3/grants/{grant_id}/signatures/{signature_id}',
    summary: 'Update a signature',
    query: SelectQuery,
    body: UpdateSignatureBody,
    response: SignatureObject,
    select: true,
  },
  deleteSignature: { method: 'DELETE', path: '/v3/grants/{grant_id}/signatures/{signature_id}', summary: 'Delete a signature', responseKind: 'empty' },
} as const satisfies RouteTable;
