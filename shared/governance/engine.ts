import type { ListRecord, RuleCondition, RuleRecord } from '#shared/db/governance';
import type { ListId } from '#shared/ids';

/**
 * The rule engine: which rules match a message and what they do. Pure: list membership is asked of
 * `member`, which the caller answers from one batch read of the pairs `candidates` names.
 */
export interface Party {
  address: string;
  domain: string;
  tld: string;
}

export interface DecisionInput {
  from?: Party;
  recipients: Party[];
  outboundType?: 'compose' | 'reply';
}

export interface AppliedActions {
  blocked: boolean;
  marked_as_spam: boolean;
  marked_as_read: boolean;
  marked_starred: boolean;
  archived: boolean;
  trashed: boolean;
  /** assign_to_folder values, in rule order (the first that names an existing folder is used). */
  folder_ids: string[];
}

export interface Outcome {
  matched: RuleRecord[];
  actions: AppliedActions;
}

type Part = keyof Party;
const partOf = (field: string) => field.slice(field.indexOf('.') + 1) as Part;

/** The lists of a condition that exist and fit its field (others never match). */
function listsOf(c: RuleCondition, lists: ReadonlyMap<string, ListRecord>): ListId[] {
  const ids = Array.isArray(c.value) ? c.value : [c.value];
  return ids.filter((id) => lists.get(id)?.type === partOf(c.field)) as ListId[];
}

/** The (list, value) pairs whose membership the rules can ask about for this input. */
export function candidates(
  rules: readonly RuleRecord[],
  input: DecisionInput,
  lists: ReadonlyMap<string, ListRecord>,
): { listId: ListId; value: string }[] {
  const pairs = new Map<string, { listId: ListId; value: string }>();
  for (const rule of rules) {
    for (const c of rule.match.conditions) {
      if (c.operator !== 'in_list') continue;
      const parties = c.field.startsWith('from.') ? (input.from ? [input.from] : []) : input.recipients;
      for (const listId of listsOf(c, lists)) {
        for (const p of parties) pairs.set(`${listId} ${p[partOf(c.field)]}`, { listId, value: p[partOf(c.field)] });
      }
    }
  }
  return [...pairs.values()];
}

function conditionHolds(
  c: RuleCondition,
  input: DecisionInput,
  lists: ReadonlyMap<string, ListRecord>,
  member: (listId: ListId, value: string) => boolean,
): boolean {
  if (c.field === 'outbound.type') {
    if (!input.outboundType) return false;
    return c.operator === 'is' ? input.outboundType === c.value : input.outboundType !== c.value;
  }
  const parties = c.field.startsWith('from.') ? (input.from ? [input.from] : []) : input.recipients;
  const values = parties.map((p) => p[partOf(c.field)]);
  const wanted = typeof c.value === 'string' ? c.value : '';
  switch (c.operator) {
    case 'is':
      return values.some((v) => v === wanted);
    case 'is_not':
      // True only when no sender / recipient has the value.
      return !values.some((v) => v === wanted);
    case 'contains':
      return values.some((v) => v.includes(wanted));
    case 'in_list': {
      const ids = listsOf(c, lists);
      return values.some((v) => ids.some((id) => member(id, v)));
    }
  }
}

/** Rules are taken in priority order (lower first, then by ID); every matching rule's actions apply. */
export function evaluate(
  rules: readonly RuleRecord[],
  input: DecisionInput,
  lists: ReadonlyMap<string, ListRecord>,
  member: (listId: ListId, value: string) => boolean,
): Outcome {
  const ordered = [...rules].sort((a, b) => a.priority - b.priority || (a.id < b.id ? -1 : 1));
  const actions: AppliedActions = {
    blocked: false,
    marked_as_spam: false,
    marked_as_read: false,
    marked_starred: false,
    archived: false,
    trashed: false,
    folder_ids: [],
  };
  const matched: RuleRecord[] = [];
  for (const rule of ordered) {
    const results = rule.match.conditions.map((c) => conditionHolds(c, input, lists, member));
    const holds = rule.match.operator === 'any' ? results.some(Boolean) : results.every(Boolean);
    if (!holds) continue;
    matched.push(rule);
    for (const action of rule.actions) {
      switch (action.type) {
        case 'block':
          actions.blocked = true;
          break;
        case 'mark_as_spam':
          actions.marked_as_spam = true;
          break;
        case 'mark_as_read':
          actions.marked_as_read = true;
          break;
        case 'mark_as_starred':
          actions.marked_starred = true;
          break;
        case 'archive':
          actions.archived = true;
          break;
        case 'trash':
          actions.trashed = true;
          break;
        case 'assign_to_folder':
          if (action.value) actions.folder_ids.push(action.value);
          break;
      }
    }
  }
  return { matched, actions };
}
