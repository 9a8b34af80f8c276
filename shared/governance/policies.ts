import type { CreatePolicyBody, UpdatePolicyBody } from '#schemas/governance';
import { decodeOffsetCursor, encodeOffsetCursor } from '#shared/cursor';
import * as db from '#shared/db/governance';
import type { PolicyRecord } from '#shared/db/governance';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, parseId, type ApplicationId, type RuleId } from '#shared/ids';
import { clock } from '#shared/time';

/**
 * Policies: the limits of the Agent Accounts of the workspaces that name them (a daily send and
 * receive count, attachment size, count and types, total MIME size). What this deployment cannot
 * enforce is refused with a 400 naming it, never stored and ignored: DNS blocklists need DNS, and
 * storage totals, retention periods and the header anomaly and sensitivity spam options have no
 * implementation here.
 */
export const policyView = (p: PolicyRecord) => ({
  id: p.id,
  object: 'policy' as const,
  name: p.name,
  limits: p.limits,
  rules: p.rules,
  spam_detection: p.spam_detection,
  application_id: p.application_id,
  created_at: p.created_at,
  updated_at: p.updated_at,
});

const NOT_ENFORCED: Record<string, string> = {
  limit_storage_total: 'storage totals are not enforced by this deployment',
  limit_inbox_retention_period: 'retention periods are not enforced by this deployment',
  limit_spam_retention_period: 'retention periods are not enforced by this deployment',
};

async function check(appId: ApplicationId, body: UpdatePolicyBody): Promise<void> {
  const problems: string[] = [];
  for (const [name, why] of Object.entries(NOT_ENFORCED)) {
    if (body.limits && (body.limits as Record<string, unknown>)[name] !== undefined)
      problems.push(`'limits.${name}': ${why}`);
  }
  const spam = body.spam_detection ?? {};
  if (spam.use_list_dnsbl)
    problems.push(
      "'spam_detection.use_list_dnsbl': DNS blocklists need DNS lookups, which this deployment does not make",
    );
  if (spam.use_header_anomaly_detection)
    problems.push(
      "'spam_detection.use_header_anomaly_detection': header anomaly detection is not available in this deployment",
    );
  if (spam.spam_sensitivity !== undefined)
    problems.push("'spam_detection.spam_sensitivity': there is no spam scoring in this deployment to tune");
  if (body.rules?.length) {
    const known = new Set((await db.allRules(appId)).map((r) => r.id as string));
    const missing = body.rules.filter((id) => !known.has(id));
    if (missing.length)
      problems.push(`'rules': ${missing.map((id) => `'${id}'`).join(', ')} not found in this application`);
  }
  if (problems.length) throw new InvalidRequestError(`Invalid policy: ${problems.join('; ')}`);
}

export async function requirePolicy(appId: ApplicationId, policyId: string): Promise<PolicyRecord> {
  const id = parseId('policy', policyId);
  const policy = id ? await db.getPolicy(appId, id) : undefined;
  if (!policy) throw new NotFoundError(`Policy '${policyId}' not found`);
  return policy;
}

export async function createPolicy(appId: ApplicationId, body: CreatePolicyBody) {
  await check(appId, body);
  const now = clock.nowSeconds();
  const record: PolicyRecord = {
    id: newId('policy'),
    application_id: appId,
    name: body.name,
    limits: body.limits ?? {},
    rules: (body.rules ?? []) as RuleId[],
    spam_detection: body.spam_detection ?? {},
    created_at: now,
    updated_at: now,
  };
  await db.putPolicy(record);
  return policyView(record);
}

export async function listPolicies(appId: ApplicationId, query: { page_token?: string }, limit: number) {
  const all = (await db.allPolicies(appId)).sort((a, b) => (a.id < b.id ? -1 : 1));
  const offset = query.page_token ? decodeOffsetCursor(query.page_token, 'policies') : 0;
  return {
    items: all.slice(offset, offset + limit).map(policyView),
    nextCursor: offset + limit < all.length ? encodeOffsetCursor('policies', offset + limit) : undefined,
  };
}

export async function updatePolicy(appId: ApplicationId, policyId: string, body: UpdatePolicyBody) {
  const current = await requirePolicy(appId, policyId);
  await check(appId, body);
  const next: PolicyRecord = {
    ...current,
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.limits !== undefined ? { limits: body.limits } : {}),
    ...(body.rules !== undefined ? { rules: body.rules as RuleId[] } : {}),
    ...(body.spam_detection !== undefined ? { spam_detection: body.spam_detection } : {}),
    updated_at: Math.max(clock.nowSeconds(), current.updated_at + 1),
  };
  if (!(await db.putPolicy(next, current)))
    throw new ConflictError('The policy was changed by another request; fetch it again and retry');
  return policyView(next);
}

/** Deletes a policy; the workspaces that named it fall back to the deployment's defaults. */
export async function deletePolicy(appId: ApplicationId, policyId: string): Promise<void> {
  const policy = await requirePolicy(appId, policyId);
  if (!(await db.deletePolicy(appId, policy.id))) throw new NotFoundError(`Policy '${policyId}' not found`);
  for (const w of await db.allWorkspaces(appId)) {
    if (w.policy_id === policy.id)
      await db.putWorkspace({ ...w, policy_id: null, updated_at: Math.max(clock.nowSeconds(), w.updated_at + 1) }, w);
  }
}
