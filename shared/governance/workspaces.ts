import type { CreateWorkspaceBody, ManualAssignBody, UpdateWorkspaceBody } from '#schemas/governance';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import * as db from '#shared/db/governance';
import type { WorkspaceRecord } from '#shared/db/governance';
import { getGrant, listGrants } from '#shared/db/grants';
import { grantKey } from '#shared/db/keys';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, parseId, type ApplicationId, type GrantId, type RuleId, type WorkspaceId } from '#shared/ids';
import { clock } from '#shared/time';
import { normalizeValue } from '#shared/governance/values';

/**
 * Workspaces attach rules (and a policy) to Agent Accounts. Every application has a default
 * workspace, created on first use, which holds the accounts no other workspace claims; a workspace
 * with a `domain` and `auto_group` claims new accounts of that domain.
 */
export const workspaceView = (w: WorkspaceRecord) => ({
  workspace_id: w.id,
  object: 'workspace' as const,
  name: w.name,
  default: w.default,
  ...(w.domain !== undefined ? { domain: w.domain } : {}),
  auto_group: w.auto_group,
  policy_id: w.policy_id,
  rule_ids: w.rule_ids,
  application_id: w.application_id,
  created_at: w.created_at,
  updated_at: w.updated_at,
});

/** The application's default workspace, created with no rules the first time it is needed. */
export async function defaultWorkspace(appId: ApplicationId, known?: WorkspaceRecord[]): Promise<WorkspaceRecord> {
  const existing = (known ?? (await db.allWorkspaces(appId))).find((w) => w.default);
  if (existing) return existing;
  const now = clock.nowSeconds();
  return db.ensureDefaultWorkspace({
    id: newId('workspace'),
    application_id: appId,
    name: 'Default workspace',
    default: true,
    auto_group: false,
    policy_id: null,
    rule_ids: [],
    created_at: now,
    updated_at: now,
  });
}

export async function requireWorkspace(appId: ApplicationId, workspaceId: string): Promise<WorkspaceRecord> {
  const id = parseId('workspace', workspaceId);
  const workspace = id ? await db.getWorkspace(appId, id) : undefined;
  if (!workspace) throw new NotFoundError(`Workspace '${workspaceId}' not found`);
  return workspace;
}

/** Rule IDs must name rules of this application; a policy ID, a policy of it. */
async function checkReferences(
  appId: ApplicationId,
  body: { rule_ids?: string[]; policy_id?: string | null },
): Promise<void> {
  if (body.rule_ids?.length) {
    const known = new Set((await db.allRules(appId)).map((r) => r.id as string));
    const missing = body.rule_ids.filter((id) => !known.has(id));
    if (missing.length)
      throw new InvalidRequestError(
        `'rule_ids': ${missing.map((id) => `'${id}'`).join(', ')} not found in this application`,
      );
  }
  if (body.policy_id) {
    const id = parseId('policy', body.policy_id);
    if (!id || !(await db.getPolicy(appId, id)))
      throw new InvalidRequestError(`'policy_id': policy '${body.policy_id}' not found in this application`);
  }
}

function checkedDomain(domain: string | undefined): string | undefined {
  if (domain === undefined) return undefined;
  const normalized = normalizeValue('domain', domain);
  if (!normalized.ok) throw new InvalidRequestError(`'domain': ${normalized.why}`);
  return normalized.value;
}

export async function createWorkspace(appId: ApplicationId, body: CreateWorkspaceBody) {
  await checkReferences(appId, body);
  await defaultWorkspace(appId);
  const now = clock.nowSeconds();
  const domain = checkedDomain(body.domain);
  if (body.auto_group && !domain)
    throw new InvalidRequestError("'auto_group' needs a 'domain': the accounts of that domain join the workspace");
  const record: WorkspaceRecord = {
    id: newId('workspace'),
    application_id: appId,
    name: body.name,
    default: false,
    ...(domain ? { domain } : {}),
    auto_group: body.auto_group ?? false,
    policy_id: body.policy_id ?? null,
    rule_ids: (body.rule_ids ?? []) as RuleId[],
    created_at: now,
    updated_at: now,
  };
  await db.putWorkspace(record);
  return workspaceView(record);
}

export async function listWorkspaces(appId: ApplicationId, query: { page_token?: string }, limit: number) {
  let all = await db.allWorkspaces(appId);
  if (!all.some((w) => w.default)) all = [await defaultWorkspace(appId, all), ...all];
  all = all.sort((a, b) => (a.default !== b.default ? (a.default ? -1 : 1) : a.id < b.id ? -1 : 1));
  const offset = query.page_token ? decodeOffsetCursor(query.page_token, 'workspaces') : 0;
  const items = all.slice(offset, offset + limit);
  return {
    items: items.map(workspaceView),
    nextCursor: offset + limit < all.length ? encodeOffsetCursor('workspaces', offset + limit) : undefined,
  };
}

export async function getWorkspace(appId: ApplicationId, workspaceId: string) {
  return workspaceView(await requireWorkspace(appId, workspaceId));
}

export async function updateWorkspace(appId: ApplicationId, workspaceId: string, body: UpdateWorkspaceBody) {
  const current = await requireWorkspace(appId, workspaceId);
  await checkReferences(appId, body);
  const domain = body.domain !== undefined ? checkedDomain(body.domain) : current.domain;
  const next: WorkspaceRecord = {
    ...current,
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(domain !== undefined ? { domain } : {}),
    ...(body.auto_group !== undefined ? { auto_group: body.auto_group } : {}),
    ...(body.policy_id !== undefined ? { policy_id: body.policy_id } : {}),
    ...(body.rule_ids !== undefined ? { rule_ids: body.rule_ids as RuleId[] } : {}),
    updated_at: Math.max(clock.nowSeconds(), current.updated_at + 1),
  };
  if (next.auto_group && !next.domain)
    throw new InvalidRequestError("'auto_group' needs a 'domain': the accounts of that domain join the workspace");
  if (!(await db.putWorkspace(next, current)))
    throw new ConflictError('The workspace was changed by another request; fetch it again and retry');
  return workspaceView(next);
}

export async function deleteWorkspace(appId: ApplicationId, workspaceId: string): Promise<void> {
  const workspace = await requireWorkspace(appId, workspaceId);
  if (workspace.default)
    throw new InvalidRequestError(
      'The default workspace cannot be deleted: it holds the accounts no other workspace claims',
    );
  if (!(await db.deleteWorkspace(appId, workspace.id))) throw new NotFoundError(`Workspace '${workspaceId}' not found`);
}

/** Puts grants of this application in the workspace; 400 naming the grants that are not. */
export async function manualAssign(appId: ApplicationId, workspaceId: string, body: ManualAssignBody) {
  const workspace = await requireWorkspace(appId, workspaceId);
  const ids = body.grant_ids.map((id) => ({ id, parsed: parseId('grant', id) }));
  const found = await Promise.all(
    ids.map(async ({ id, parsed }) => ({ id, grant: parsed ? await getGrant(appId, parsed) : undefined })),
  );
  const missing = found.filter((f) => !f.grant).map((f) => f.id);
  if (missing.length)
    throw new InvalidRequestError(
      `'grant_ids': ${missing.map((id) => `'${id}'`).join(', ')} not found in this application`,
    );
  for (const f of found) await db.assignGrantWorkspace(grantKey(appId, f.grant!.id), workspace.id);
  return { workspace_id: workspace.id, grant_ids: found.map((f) => f.grant!.id as string) };
}

/**
 * The workspace a new account of `email` joins: the one named, else an auto-group workspace of its
 * domain; undefined means the default workspace (decisions fall back to it).
 */
export async function workspaceForNewGrant(
  appId: ApplicationId,
  email: string,
  named?: string,
): Promise<WorkspaceId | undefined> {
  if (named !== undefined) {
    const id = parseId('workspace', named);
    const workspace = id ? await db.getWorkspace(appId, id) : undefined;
    if (!workspace) throw new InvalidRequestError(`'workspace_id': workspace '${named}' not found in this application`);
    return workspace.id;
  }
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  const all = await db.allWorkspaces(appId);
  return all.filter((w) => w.auto_group && w.domain === domain).sort((a, b) => (a.id < b.id ? -1 : 1))[0]?.id;
}

/** POST /v3/workspaces/auto-group: existing accounts whose domain an auto-group workspace names join it. */
export async function autoGroup(appId: ApplicationId) {
  const groups = (await db.allWorkspaces(appId)).filter((w) => w.auto_group && w.domain);
  const assigned: { grant_id: string; workspace_id: string }[] = [];
  let start: Record<string, string | number> | undefined;
  do {
    const page = await listGrants(appId, {
      limit: 200,
      offset: 0,
      ascending: true,
      ...(start ? { startKey: start } : {}),
    });
    for (const grant of page.items) {
      const domain = grant.email.slice(grant.email.lastIndexOf('@') + 1);
      const target = groups.find((w) => w.domain === domain);
      if (target && grant.workspace_id !== target.id) {
        await db.assignGrantWorkspace(grantKey(appId, grant.id as GrantId), target.id);
        assigned.push({ grant_id: grant.id, workspace_id: target.id });
      }
    }
    start = page.nextKey;
  } while (start);
  return { assigned };
}
