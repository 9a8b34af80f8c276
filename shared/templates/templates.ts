import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import { signatureKey, signaturesOfGrant, templateKey, templatesOfGrant, type Key } from '#shared/db/keys';
import {
  VersionConflictError,
  allKeys,
  createRecord,
  deleteRecord,
  getRecord,
  listRecords,
  replaceRecord,
} from '#shared/db/records';
import { ConflictError, NotFoundError } from '#shared/errors';
import { countWithinBudget, jsonBytes } from '#shared/answer-limits';
import { newId, parseId, type GrantId, type Id, type SignatureId, type TemplateId } from '#shared/ids';
import type { TemplateFields } from '#shared/templates/render';
import { clock } from '#shared/time';
import type {
  CreateSignatureBody,
  CreateTemplateBody,
  TemplateEngine,
  UpdateSignatureBody,
  UpdateTemplateBody,
} from '#schemas/templates';

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

/**
 * The engines (handlebars, mustache, twig) load when a template is first checked or rendered, not
 * at cold start: listing, reading and deleting templates, signatures and most sends never need them.
 */
const engines = () => import('#shared/templates/render');

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

type Kind = 'template' | 'signature';
type Versioned<K extends Kind> = { id: Id<K>; updated_at: number; version: number };

/** Templates and signatures are stored alike: one versioned record per ID, in a partition of the grant. */
interface Collection<K extends Kind, R extends Versioned<K>, V> {
  kind: K;
  /** For messages: 'Template'. */
  noun: string;
  /** Scope of its list cursors. */
  scope: string;
  key: (grantId: GrantId, id: Id<K>) => Key;
  partition: (grantId: GrantId) => { pk: string };
  /** The API object of a record. */
  view: (record: R) => V;
}

const TEMPLATES = {
  kind: 'template',
  noun: 'Template',
  scope: 'templates',
  key: templateKey,
  partition: templatesOfGrant,
  view: templateView,
} as const;
const SIGNATURES = {
  kind: 'signature',
  noun: 'Signature',
  scope: 'signatures',
  key: signatureKey,
  partition: signaturesOfGrant,
  view: signatureView,
} as const;

const notFound = (c: { noun: string }, rawId: string) => new NotFoundError(`${c.noun} '${rawId}' not found`);

async function findRecord<K extends Kind, R extends Versioned<K>>(
  c: Collection<K, R, unknown>,
  grantId: GrantId,
  rawId: string,
): Promise<R> {
  const id = parseId(c.kind, rawId);
  const record = id ? await getRecord<R>(c.key(grantId, id)) : undefined;
  if (!record) throw notFound(c, rawId);
  return record;
}

async function listPage<K extends Kind, R extends Versioned<K>, V>(
  c: Collection<K, R, V>,
  grantId: GrantId,
  limit: number,
  pageToken?: string,
) {
  const before = pageToken ? decodeBeforeCursor(pageToken, c.scope, c.kind) : undefined;
  const page = await listRecords<R>(c.partition(grantId).pk, { limit, before });
  // A page of long templates ends early rather than outgrow an answer (80 KB each, 200 a page).
  const views = page.items.map(c.view);
  const count = countWithinBudget(views.map(jsonBytes));
  const last = count < views.length ? page.items[count - 1]!.id : page.last;
  return { items: views.slice(0, count), nextCursor: last ? encodeBeforeCursor(c.scope, last) : undefined };
}

/** Stores `current` with `changes` as its next version, unless another request changed it since it was read. */
async function storeChanges<K extends Kind, R extends Versioned<K>>(
  c: Collection<K, R, unknown>,
  grantId: GrantId,
  current: R,
  changes: Partial<R>,
): Promise<R> {
  const next: R = { ...current, ...changes, updated_at: clock.nowSeconds(), version: current.version + 1 };
  try {
    await replaceRecord(c.key(grantId, current.id), next, current.version);
  } catch (error) {
    if (error instanceof VersionConflictError)
      throw new ConflictError(`The ${c.kind} was changed by another request; fetch it again and retry`);
    throw error;
  }
  return next;
}

/** One call: the delete itself reports whether the record existed. */
async function deleteById<K extends Kind>(
  c: Collection<K, never, unknown>,
  grantId: GrantId,
  rawId: string,
): Promise<void> {
  const id = parseId(c.kind, rawId);
  if (!id || !(await deleteRecord(c.key(grantId, id)))) throw notFound(c, rawId);
}

export const requireTemplate = (grantId: GrantId, templateId: string) => findRecord(TEMPLATES, grantId, templateId);

export const listTemplates = (grant: GrantRecord, limit: number, pageToken?: string) =>
  listPage(TEMPLATES, grant.id, limit, pageToken);

export async function createTemplate(grant: GrantRecord, body: CreateTemplateBody) {
  (await engines()).checkTemplate(body.engine, { subject: body.subject, body: body.body });
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
  const changed = { ...current, ...body };
  // A new engine must accept the existing text, and new text the (possibly new) engine.
  (await engines()).checkTemplate(changed.engine, { subject: changed.subject, body: changed.body });
  return templateView(await storeChanges(TEMPLATES, grant.id, current, body));
}

export const deleteTemplate = (grant: GrantRecord, templateId: string): Promise<void> =>
  deleteById(TEMPLATES, grant.id, templateId);

/** Renders a template; `overrides` (explicit subject or body of a draft or send) win over the template's. */
export async function renderStoredTemplate(
  grantId: GrantId,
  ref: { id: string; variables?: Record<string, unknown> },
  overrides: TemplateFields = {},
): Promise<{ subject?: string; body: string }> {
  const template = await requireTemplate(grantId, ref.id);
  const rendered = (await engines()).renderTemplate(
    template.engine,
    { subject: template.subject, body: template.body },
    ref.variables ?? {},
  );
  return {
    subject: overrides.subject ?? rendered.subject,
    // A template always has a body (it is required when created).
    body: overrides.body ?? rendered.body ?? '',
  };
}

export const requireSignature = (grantId: GrantId, signatureId: string) => findRecord(SIGNATURES, grantId, signatureId);

export const listSignatures = (grant: GrantRecord, limit: number, pageToken?: string) =>
  listPage(SIGNATURES, grant.id, limit, pageToken);

export async function createSignature(grant: GrantRecord, body: CreateSignatureBody) {
  // Every key of the partition, page after page: one query page stops at 1 MB, i.e. after two or
  // three long signatures, and would let the count stay under the limit.
  const count = (await allKeys(SIGNATURES.partition(grant.id).pk)).length;
  if (count >= MAX_SIGNATURES)
    throw new ConflictError(`A grant can hold at most ${MAX_SIGNATURES} signatures; delete one first`);
  const now = clock.nowSeconds();
  const record: SignatureRecord = {
    id: newId('signature'),
    grant_id: grant.id,
    name: body.name,
    body: body.body,
    created_at: now,
    updated_at: now,
    version: 1,
  };
  await createRecord(signatureKey(grant.id, record.id), record);
  return signatureView(record);
}

export async function updateSignature(grant: GrantRecord, signatureId: string, body: UpdateSignatureBody) {
  const current = await requireSignature(grant.id, signatureId);
  return signatureView(await storeChanges(SIGNATURES, grant.id, current, body));
}

export const deleteSignature = (grant: GrantRecord, signatureId: string): Promise<void> =>
  deleteById(SIGNATURES, grant.id, signatureId);

/** Appends a signature after a line break at the end of the body (HTML or plain text). */
export function appendSignature(body: string, signature: string, isPlaintext: boolean): string {
  return isPlaintext ? `${body}\n\n${signature}` : `${body}<br><br>${signature}`;
}
