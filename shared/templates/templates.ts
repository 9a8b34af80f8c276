import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/db/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { signatureKey, signaturesOfGrant, templateKey, templatesOfGrant } from '#shared/db/keys';
import { VersionConflictError, createRecord, deleteRecord, getRecord, listRecords, replaceRecord } from '#shared/db/records';
import { ConflictError, NotFoundError } from '#shared/http/errors';
import { newId, parseId, type GrantId, type SignatureId, type TemplateId } from '#shared/ids';
import { checkTemplate, renderTemplate, type TemplateEngine, type TemplateFields } from '#shared/templates/render';
import { clock } from '#shared/time';
import type { CreateSignatureBody, CreateTemplateBody, UpdateSignatureBody, UpdateTemplateBody } from '#schemas/templates';

/**
 * Grant-level email templates and signatures. They belong to Switchboard, not to the mailbox
 * provider, so they work the same for every kind of grant.
 */
export interface TemplateRecord {
  id: TemplateId;
  grant_id: GrantId;
  engine: TemplateEngine;
  name: string;
  subject?: string;
  body: string;
  created_at: number;
  updated_at: number;
  version: number;
}

export interface SignatureRecord {
  id: SignatureId;
  grant_id: GrantId;
  name: string;
  body: string;
  created_at: number;
  updated_at: number;
  version: number;
}

const MAX_SIGNATURES = 10;

export const templateView = (t: TemplateRecord) => ({
  id: t.id,
  object: 'template' as const,
  grant_id: t.grant_id,
  app_id: null,
  engine: t.engine,
  name: t.name,
  subject: t.subject ?? '',
  body: t.body,
  created_at: t.created_at,
  updated_at: t.updated_at,
});

export const signatureView = (s: SignatureRecord) => ({
  id: s.id,
  object: 'signature' as const,
  grant_id: s.grant_id,
  name: s.name,
  body: s.body,
  created_at: s.created_at,
  updated_at: s.updated_at,
});

export async function requireTemplate(grantId: GrantId, templateId: string): Promise<TemplateRecord> {
  const id = parseId('template', templateId);
  const record = id ? await getRecord<TemplateRecord>(templateKey(grantId, id)) : undefined;
  if (!record) throw new NotFoundError(`Template '${templateId}' not found`);
  return record;
}

export async function listTemplates(grant: GrantRecord, limit: number, pageToken?: string) {
  const before = pageToken ? decodeBeforeCursor(pageToken, 'templates', 'template') : undefined;
  const page = await listRecords<TemplateRecord>(templatesOfGrant(grant.id).pk, { limit, before });
  return { items: page.items.map(templateView), nextCursor: page.last ? encodeBeforeCursor('templates', page.last) : undefined };
}

export async function createTemplate(grant: GrantRecord, body: CreateTemplateBody) {
  checkTemplate(body.engine, { subject: body.subject, body: body.body });
  const now = clock.nowSeconds();
  const record: TemplateRecord = {
    id: newId('template'),
    grant_id: grant.id,
    engine: body.engine,
    name: body.name,
    ...(body.subject !== undefined ? { subject: body.subject } : {}),
    body: body.body,
    created_at: now,
    updated_at: now,
    version: 1,
  };
  await createRecord(templateKey(grant.id, record.id), record);
  return templateView(record);
}

export async function updateTemplate(grant: GrantRecord, templateId: string, body: UpdateTemplateBody) {
  const current = await requireTemplate(grant.id, templateId);
  const next: TemplateRecord = { ...current, ...body, updated_at: clock.nowSeconds(), version: current.version + 1 };
  // A new engine must accept the existing text, and new text the (possibly new) engine.
  checkTemplate(next.engine, { subject: next.subject, body: next.body });
  try {
    await replaceRecord(templateKey(grant.id, current.id), next, current.version);
  } catch (error) {
    if (error instanceof VersionConflictError) throw new ConflictError('The template was changed by another request; fetch it again and retry');
    throw error;
  }
  return templateView(next);
}

export async function deleteTemplate(grant: GrantRecord, templateId: string): Promise<void> {
  const current = await requireTemplate(grant.id, templateId);
  if (!(await deleteRecord(templateKey(grant.id, current.id)))) throw new NotFoundError(`Template '${templateId}' not found`);
}

/** Renders a template; `overrides` (explicit subject or body of a draft or send) win over the template's. */
export async function renderStoredTemplate(
  grantId: GrantId,
  ref: { id: string; variables?: Record<string, unknown> },
  overrides: TemplateFields = {},
): Promise<{ subject?: string; body?: string }> {
  const template = await requireTemplate(grantId, ref.id);
  const rendered = renderTemplate(template.engine, { subject: template.subject, body: template.body }, ref.variables ?? {});
  return {
    subject: overrides.subject ?? rendered.subject,
    body: overrides.body ?? rendered.body,
  };
}

export async function requireSignature(grantId: GrantId, signatureId: string): Promise<SignatureRecord> {
  const id = parseId('signature', signatureId);
  const record = id ? await getRecord<SignatureRecord>(signatureKey(grantId, id)) : undefined;
  if (!record) throw new NotFoundError(`Signature '${signatureId}' not found`);
  return record;
}

export async function listSignatures(grant: GrantRecord, limit: number, pageToken?: string) {
  const before = pageToken ? decodeBeforeCursor(pageToken, 'signatures', 'signature') : undefined;
  const page = await listRecords<SignatureRecord>(signaturesOfGrant(grant.id).pk, { limit, before });
  return { items: page.items.map(signatureView), nextCursor: page.last ? encodeBeforeCursor('signatures', page.last) : undefined };
}

export async function createSignature(grant: GrantRecord, body: CreateSignatureBody) {
  const existing = await listRecords<SignatureRecord>(signaturesOfGrant(grant.id).pk, { limit: MAX_SIGNATURES });
  if (existing.items.length >= MAX_SIGNATURES) throw new ConflictError(`A grant can hold at most ${MAX_SIGNATURES} signatures; delete one first`);
  const now = clock.nowSeconds();
  const record: SignatureRecord = { id: newId('signature'), grant_id: grant.id, name: body.name, body: body.body, created_at: now, updated_at: now, version: 1 };
  await createRecord(signatureKey(grant.id, record.id), record);
  return signatureView(record);
}

export async function updateSignature(grant: GrantRecord, signatureId: string, body: UpdateSignatureBody) {
  const current = await requireSignature(grant.id, signatureId);
  const next: SignatureRecord = { ...current, ...body, updated_at: clock.nowSeconds(), version: current.version + 1 };
  try {
    await replaceRecord(signatureKey(grant.id, current.id), next, current.version);
  } catch (error) {
    if (error instanceof VersionConflictError) throw new ConflictError('The signature was changed by another request; fetch it again and retry');
    throw error;
  }
  return signatureView(next);
}

export async function deleteSignature(grant: GrantRecord, signatureId: string): Promise<void> {
  const current = await requireSignature(grant.id, signatureId);
  if (!(await deleteRecord(signatureKey(grant.id, current.id)))) throw new NotFoundError(`Signature '${signatureId}' not found`);
}

/** Appends a signature after a line break at the end of the body (HTML or plain text). */
export function appendSignature(body: string, signature: string, isPlaintext: boolean): string {
  return isPlaintext ? `${body}\n\n${signature}` : `${body}<br><br>${signature}`;
}
