import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/cursor';
import type { GrantRecord } from '#shared/db/grants';
import {
  applicationTemplateKey,
  signatureKey,
  signaturesOfGrant,
  templateKey,
  templatesOfApplication,
  templatesOfGrant,
  type Key,
} from '#shared/db/keys';
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
import {
  newId,
  parseId,
  type ApplicationId,
  type ApplicationTemplateId,
  type GrantId,
  type Id,
  type SignatureId,
  type TemplateId,
} from '#shared/ids';
import type { TemplateFields } from '#shared/templates/render';
import { clock } from '#shared/time';
import type {
  CreateSignatureBody,
  CreateTemplateBody,
  RenderInlineTemplateBody,
  TemplateEngine,
  UpdateSignatureBody,
  UpdateTemplateBody,
} from '#schemas/templates';

/**
 * Email templates and signatures. They belong to Switchboard, not to the mailbox provider, so they
 * work the same for every kind of grant. A template is a grant's (`tpl_`), or its application's
 * (`atpl_`, shared by every grant of the application): the prefix of the ID a send or draft names
 * says which, so the two never shadow each other.
 */
interface TemplateText {
  engine: TemplateEngine;
  name: string;
  subject?: string;
  body: string;
  created_at: number;
  updated_at: number;
  version: number;
}

export interface TemplateRecord extends TemplateText {
  id: TemplateId;
  grant_id: GrantId;
}

export interface ApplicationTemplateRecord extends TemplateText {
  id: ApplicationTemplateId;
  application_id: ApplicationId;
}

/** Whose templates a message may name: its grant's, and its application's. */
export type TemplateOwner = Pick<GrantRecord, 'id' | 'application_id'>;

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

export const applicationTemplateView = (t: ApplicationTemplateRecord) => ({
  id: t.id,
  object: 'template' as const,
  grant_id: null,
  app_id: t.application_id,
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

type Kind = 'template' | 'applicationTemplate' | 'signature';
type Versioned<K extends Kind> = { id: Id<K>; updated_at: number; version: number };
/** The grant or the application whose partition holds a collection. */
type Owner = GrantId | ApplicationId;

/** Templates and signatures are stored alike: one versioned record per ID, in a partition of their owner. */
interface Collection<K extends Kind, O extends Owner, R extends Versioned<K>, V> {
  kind: K;
  /** For messages: 'Template'. */
  noun: string;
  /** Scope of its list cursors. */
  scope: string;
  key: (owner: O, id: Id<K>) => Key;
  partition: (owner: O) => { pk: string };
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
const APPLICATION_TEMPLATES = {
  kind: 'applicationTemplate',
  noun: 'Template',
  scope: 'application-templates',
  key: applicationTemplateKey,
  partition: templatesOfApplication,
  view: applicationTemplateView,
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

async function findRecord<K extends Kind, O extends Owner, R extends Versioned<K>>(
  c: Collection<K, O, R, unknown>,
  owner: O,
  rawId: string,
): Promise<R> {
  const id = parseId(c.kind, rawId);
  const record = id ? await getRecord<R>(c.key(owner, id)) : undefined;
  if (!record) throw notFound(c, rawId);
  return record;
}

async function listPage<K extends Kind, O extends Owner, R extends Versioned<K>, V>(
  c: Collection<K, O, R, V>,
  owner: O,
  limit: number,
  pageToken?: string,
) {
  const before = pageToken ? decodeBeforeCursor(pageToken, c.scope, c.kind) : undefined;
  const page = await listRecords<R>(c.partition(owner).pk, { limit, before });
  // A page of long templates ends early rather than outgrow an answer (80 KB each, 200 a page).
  const views = page.items.map(c.view);
  const count = countWithinBudget(views.map(jsonBytes));
  const last = count < views.length ? page.items[count - 1]!.id : page.last;
  return { items: views.slice(0, count), nextCursor: last ? encodeBeforeCursor(c.scope, last) : undefined };
}

/** Stores `current` with `changes` as its next version, unless another request changed it since it was read. */
async function storeChanges<K extends Kind, O extends Owner, R extends Versioned<K>>(
  c: Collection<K, O, R, unknown>,
  owner: O,
  current: R,
  changes: Partial<R>,
): Promise<R> {
  const next: R = { ...current, ...changes, updated_at: clock.nowSeconds(), version: current.version + 1 };
  try {
    await replaceRecord(c.key(owner, current.id), next, current.version);
  } catch (error) {
    if (error instanceof VersionConflictError)
      throw new ConflictError(`The ${c.noun.toLowerCase()} was changed by another request; fetch it again and retry`);
    throw error;
  }
  return next;
}

/** One call: the delete itself reports whether the record existed. */
async function deleteById<K extends Kind, O extends Owner>(
  c: Collection<K, O, never, unknown>,
  owner: O,
  rawId: string,
): Promise<void> {
  const id = parseId(c.kind, rawId);
  if (!id || !(await deleteRecord(c.key(owner, id)))) throw notFound(c, rawId);
}

/** A new template's fields, once its engine accepts its subject and body. */
async function newTemplateText(body: CreateTemplateBody): Promise<TemplateText> {
  (await engines()).checkTemplate(body.engine, { subject: body.subject, body: body.body });
  const now = clock.nowSeconds();
  return {
    engine: body.engine,
    name: body.name,
    ...(body.subject !== undefined ? { subject: body.subject } : {}),
    body: body.body,
    created_at: now,
    updated_at: now,
    version: 1,
  };
}

/** Stores the fields sent; a new engine must accept the existing text, and new text the (possibly new) engine. */
async function updateText<
  K extends 'template' | 'applicationTemplate',
  O extends Owner,
  R extends Versioned<K> & TemplateText,
>(c: Collection<K, O, R, unknown>, owner: O, rawId: string, body: UpdateTemplateBody): Promise<R> {
  const current = await findRecord(c, owner, rawId);
  const changed = { ...current, ...body };
  (await engines()).checkTemplate(changed.engine, { subject: changed.subject, body: changed.body });
  return storeChanges(c, owner, current, changed);
}

/** Subject and body rendered with `variables` (a template without a subject renders none). */
async function renderText(template: TemplateText, variables: Record<string, unknown>, strict?: boolean) {
  const rendered = (await engines()).renderTemplate(
    template.engine,
    { subject: template.subject, body: template.body },
    variables,
    { strict },
  );
  // A template always has a body (it is required when created).
  return { subject: rendered.subject, body: rendered.body ?? '' };
}

export const requireTemplate = (grantId: GrantId, templateId: string) => findRecord(TEMPLATES, grantId, templateId);

export const listTemplates = (grant: GrantRecord, limit: number, pageToken?: string) =>
  listPage(TEMPLATES, grant.id, limit, pageToken);

export async function createTemplate(grant: GrantRecord, body: CreateTemplateBody) {
  const record: TemplateRecord = { id: newId('template'), grant_id: grant.id, ...(await newTemplateText(body)) };
  await createRecord(templateKey(grant.id, record.id), record);
  return templateView(record);
}

export const updateTemplate = async (grant: GrantRecord, templateId: string, body: UpdateTemplateBody) =>
  templateView(await updateText(TEMPLATES, grant.id, templateId, body));

export const deleteTemplate = (grant: GrantRecord, templateId: string): Promise<void> =>
  deleteById(TEMPLATES, grant.id, templateId);

export const requireApplicationTemplate = (appId: ApplicationId, templateId: string) =>
  findRecord(APPLICATION_TEMPLATES, appId, templateId);

export const getApplicationTemplate = async (appId: ApplicationId, templateId: string) =>
  applicationTemplateView(await requireApplicationTemplate(appId, templateId));

export const listApplicationTemplates = (appId: ApplicationId, limit: number, pageToken?: string) =>
  listPage(APPLICATION_TEMPLATES, appId, limit, pageToken);

export async function createApplicationTemplate(appId: ApplicationId, body: CreateTemplateBody) {
  const record: ApplicationTemplateRecord = {
    id: newId('applicationTemplate'),
    application_id: appId,
    ...(await newTemplateText(body)),
  };
  await createRecord(applicationTemplateKey(appId, record.id), record);
  return applicationTemplateView(record);
}

export const updateApplicationTemplate = async (appId: ApplicationId, templateId: string, body: UpdateTemplateBody) =>
  applicationTemplateView(await updateText(APPLICATION_TEMPLATES, appId, templateId, body));

export const deleteApplicationTemplate = (appId: ApplicationId, templateId: string): Promise<void> =>
  deleteById(APPLICATION_TEMPLATES, appId, templateId);

/**
 * The template a grant's message names: an application template (`atpl_`) of the grant's own
 * application, else a template of the grant. Another application's or another grant's is not found.
 */
const templateOf = (grant: TemplateOwner, templateId: string): Promise<TemplateText> =>
  parseId('applicationTemplate', templateId)
    ? requireApplicationTemplate(grant.application_id, templateId)
    : requireTemplate(grant.id, templateId);

/**
 * Renders the template a send or draft names (the grant's or its application's); `overrides`
 * (explicit subject or body of the draft or send) win over the template's.
 */
export async function renderStoredTemplate(
  grant: TemplateOwner,
  ref: { id: string; variables?: Record<string, unknown>; strict?: boolean },
  overrides: TemplateFields = {},
): Promise<{ subject?: string; body: string }> {
  const rendered = await renderText(await templateOf(grant, ref.id), ref.variables ?? {}, ref.strict);
  return { subject: overrides.subject ?? rendered.subject, body: overrides.body ?? rendered.body };
}

/** The render endpoints' answer: a template without a subject renders an empty one. */
const renderAnswer = (rendered: { subject?: string; body: string }) => ({
  subject: rendered.subject ?? '',
  body: rendered.body,
});

/** `POST /v3/grants/{grant_id}/templates/{template_id}/render`: the grant's template or its application's. */
export const renderTemplateOfGrant = async (
  grant: TemplateOwner,
  templateId: string,
  variables: Record<string, unknown>,
  strict?: boolean,
) => renderAnswer(await renderStoredTemplate(grant, { id: templateId, variables, strict }));

export const renderApplicationTemplate = async (
  appId: ApplicationId,
  templateId: string,
  variables: Record<string, unknown>,
  strict?: boolean,
) => renderAnswer(await renderText(await requireApplicationTemplate(appId, templateId), variables, strict));

/** A body given in the request, rendered with the same engines and limits, and stored nowhere. */
export async function renderInlineTemplate(request: RenderInlineTemplateBody): Promise<{ body: string }> {
  const rendered = (await engines()).renderTemplate(request.engine, { body: request.body }, request.variables, {
    strict: request.strict,
  });
  return { body: rendered.body ?? '' };
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
