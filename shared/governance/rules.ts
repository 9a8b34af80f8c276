import type { CreateRuleBody, UpdateRuleBody } from '#schemas/governance';
import { ruleKey, rulesOfApplication } from '#shared/db/keys';
import { decodeCursor, encodeCursor } from '#shared/cursor';
import * as db from '#shared/db/governance';
import type { ListRecord, RuleCondition, RuleRecord } from '#shared/db/governance';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, parseId, type ApplicationId, type ListId } from '#shared/ids';
import { clock } from '#shared/time';

/**
 * Rules: conditions on the sender (`from.*`), the recipients (`recipient.*`, outbound only) and the
 * kind of send (`outbound.type`), combined with `any` or `all`, and the actions taken when they
 * match. Checked as the published contract describes before anything is stored.
 */
export const ruleView = (r: RuleRecord) => ({
  id: r.id,
  object: 'rule' as const,
  name: r.name,
  ...(r.description !== undefined ? { description: r.description } : {}),
  priority: r.priority,
  enabled: r.enabled,
  trigger: r.trigger,
  match: r.match,
  actions: r.actions,
  application_id: r.application_id,
  created_at: r.created_at,
  updated_at: r.updated_at,
});

export async function requireRule(appId: ApplicationId, ruleId: string): Promise<RuleRecord> {
  const id = parseId('rule', ruleId);
  const rule = id ? await db.getRule(appId, id) : undefined;
  if (!rule) throw new NotFoundError(`Rule '${ruleId}' not found`);
  return rule;
}

/** The list type a field's values have (`from.domain` → domain). */
const fieldType = (field: string) => field.slice(field.indexOf('.') + 1) as ListRecord['type'];

/** Checks a rule's conditions and actions; 400 naming the first problem found in each. */
async function checkRule(appId: ApplicationId, rule: Pick<RuleRecord, 'trigger' | 'match' | 'actions'>): Promise<void> {
  const problems: string[] = [];
  let lists: Map<string, ListRecord> | undefined;
  for (const [i, c] of rule.match.conditions.entries()) {
    const at = `match.conditions[${i}]`;
    if (rule.trigger === 'inbound' && !c.field.startsWith('from.')) {
      problems.push(
        `${at}: inbound rules match the sender only (from.address, from.domain, from.tld); '${c.field}' applies to outbound rules`,
      );
      continue;
    }
    if (c.field === 'outbound.type') {
      if (c.operator !== 'is' && c.operator !== 'is_not')
        problems.push(`${at}: 'outbound.type' takes the operators is and is_not only`);
      else if (c.value !== 'compose' && c.value !== 'reply')
        problems.push(`${at}: 'outbound.type' is 'compose' or 'reply'`);
      continue;
    }
    if (c.operator === 'in_list') {
      const ids = Array.isArray(c.value) ? c.value : [c.value];
      lists ??= new Map((await db.allLists(appId)).map((l) => [l.id, l]));
      for (const id of ids) {
        const list = lists.get(id);
        if (!list) problems.push(`${at}: list '${id}' not found in this application`);
        else if (list.type !== fieldType(c.field))
          problems.push(
            `${at}: list '${id}' holds ${list.type} values, and '${c.field}' needs a ${fieldType(c.field)} list`,
          );
      }
      continue;
    }
    if (Array.isArray(c.value))
      problems.push(`${at}: '${c.operator}' takes one string value (an array is for in_list)`);
  }
  for (const [i, a] of rule.actions.entries()) {
    if (a.type === 'assign_to_folder' && !a.value)
      problems.push(
        `actions[${i}]: 'assign_to_folder' needs a 'value': the folder's name or path (system folders by name too)`,
      );
    if (a.type !== 'assign_to_folder' && a.value !== undefined)
      problems.push(`actions[${i}]: '${a.type}' takes no 'value'`);
  }
  if (problems.length) throw new InvalidRequestError(`Invalid rule: ${problems.join('; ')}`);
}

/** Conditions as stored: values of is / is_not / contains lowercased (matching is case-insensitive). */
const normalizedConditions = (conditions: RuleCondition[]) =>
  conditions.map((c) =>
    c.operator === 'in_list'
      ? c
      : { ...c, value: typeof c.value === 'string' ? c.value.trim().toLowerCase() : c.value },
  );

export async function createRule(appId: ApplicationId, body: CreateRuleBody) {
  const now = clock.nowSeconds();
  const record: RuleRecord = {
    id: newId('rule'),
    application_id: appId,
    name: body.name,
    ...(body.description !== undefined ? { description: body.description } : {}),
    priority: body.priority ?? 10,
    enabled: body.enabled ?? true,
    trigger: body.trigger ?? 'inbound',
    match: {
      operator: body.match.operator ?? 'all',
      conditions: normalizedConditions(body.match.conditions as RuleCondition[]),
    },
    actions: body.actions.map((a) => ({ type: a.type, ...(a.value !== undefined ? { value: a.value } : {}) })),
    created_at: now,
    updated_at: now,
  };
  await checkRule(appId, record);
  await db.putRule(record);
  return ruleView(record);
}

export async function listRules(appId: ApplicationId, query: { page_token?: string }, limit: number) {
  const all = (await db.allRules(appId)).sort((a, b) => (a.id < b.id ? -1 : 1));
  const after = query.page_token
    ? (decodeCursor(query.page_token, rulesOfApplication(appId)).sk as string).slice(
        rulesOfApplication(appId).skPrefix.length,
      )
    : undefined;
  const rest = after ? all.filter((r) => r.id > after) : all;
  const items = rest.slice(0, limit);
  const more = rest.length > limit;
  return {
    items: items.map(ruleView),
    nextCursor: more ? encodeCursor({ ...ruleKey(appId, items.at(-1)!.id) }) : undefined,
  };
}

export async function updateRule(appId: ApplicationId, ruleId: string, body: UpdateRuleBody) {
  const current = await requireRule(appId, ruleId);
  const next: RuleRecord = {
    ...current,
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
    ...(body.priority !== undefined ? { priority: body.priority } : {}),
    ...(body.enabled !== undefined ? { enabled: body.enabled } : {}),
    ...(body.trigger !== undefined ? { trigger: body.trigger } : {}),
    ...(body.match !== undefined
      ? {
          match: {
            operator: body.match.operator ?? 'all',
            conditions: normalizedConditions(body.match.conditions as RuleCondition[]),
          },
        }
      : {}),
    ...(body.actions !== undefined
      ? { actions: body.actions.map((a) => ({ type: a.type, ...(a.value !== undefined ? { value: a.value } : {}) })) }
      : {}),
    updated_at: Math.max(clock.nowSeconds(), current.updated_at + 1),
  };
  await checkRule(appId, next);
  if (!(await db.putRule(next, current)))
    throw new ConflictError('The rule was changed by another request; fetch it again and retry');
  return ruleView(next);
}

export async function deleteRule(appId: ApplicationId, ruleId: string): Promise<void> {
  const rule = await requireRule(appId, ruleId);
  if (!(await db.deleteRule(appId, rule.id))) throw new NotFoundError(`Rule '${ruleId}' not found`);
  // Workspaces stop naming it (decisions already skip a rule that does not exist).
  for (const w of await db.allWorkspaces(appId)) {
    if (w.rule_ids.includes(rule.id))
      await db.putWorkspace(
        {
          ...w,
          rule_ids: w.rule_ids.filter((id) => id !== rule.id),
          updated_at: Math.max(clock.nowSeconds(), w.updated_at + 1),
        },
        w,
      );
  }
}

export type { ListId };
