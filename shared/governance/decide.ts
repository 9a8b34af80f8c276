import * as db from '#shared/db/governance';
import type { EvaluationRecord, ListRecord, PolicyRecord, RuleRecord, WorkspaceRecord } from '#shared/db/governance';
import type { PolicyLimits } from '#schemas/governance';
import {
  candidates,
  evaluate,
  type AppliedActions,
  type DecisionInput,
  type Outcome,
  type Party,
} from '#shared/governance/engine';
import { addressParts } from '#shared/governance/values';
import { newId, type ApplicationId, type GrantId, type WorkspaceId } from '#shared/ids';
import { clock } from '#shared/time';

/**
 * Deciding a message against the rules of its account's workspace. What a decision needs of the
 * application's lists, rules and workspaces is cached per container under the application's
 * governance version, read (one GetItem) with every decision: a change takes effect for the very
 * next message, in every container. List membership is one BatchGetItem of the candidate values.
 */
interface Config {
  version: number;
  rules: Map<string, RuleRecord>;
  lists: Map<string, ListRecord>;
  workspaces: WorkspaceRecord[];
  policies: Map<string, PolicyRecord>;
}

const cache = new Map<ApplicationId, Config>();

async function configOf(appId: ApplicationId): Promise<Config> {
  const version = await db.governanceVersion(appId);
  const cached = cache.get(appId);
  if (cached && cached.version === version) return cached;
  const [rules, lists, workspaces, policies] = await Promise.all([
    db.allRules(appId),
    db.allLists(appId),
    db.allWorkspaces(appId),
    db.allPolicies(appId),
  ]);
  const config: Config = {
    version,
    rules: new Map(rules.map((r) => [r.id, r])),
    lists: new Map(lists.map((l) => [l.id, l])),
    workspaces,
    policies: new Map(policies.map((p) => [p.id, p])),
  };
  cache.set(appId, config);
  return config;
}

export type Stage = EvaluationRecord['evaluation_stage'];

export interface Decision extends Outcome {
  input: DecisionInput;
}

/** A party from an address (undefined when it is not a valid address). */
export const partyOf = (address: string | undefined): Party | undefined =>
  address ? addressParts(address) : undefined;

type Governed = { id: GrantId; application_id: string; workspace_id?: WorkspaceId };

const workspaceOf = (config: Config, grant: Governed) =>
  (grant.workspace_id && config.workspaces.find((w) => w.id === grant.workspace_id)) ||
  config.workspaces.find((w) => w.default);

/**
 * What governs one message of an account: its workspace policy's limits (empty: the deployment's
 * defaults apply) and its rules. One read of the governance version per message, whatever is asked
 * of it: read it once and pass it along.
 */
export interface Governance {
  limits: PolicyLimits;
  /**
   * The outcome of the rules of `trigger` that apply to the account, or undefined when none do (its
   * workspace has no such rules enabled): then nothing was evaluated.
   */
  decide(trigger: 'inbound' | 'outbound', input: DecisionInput): Promise<Decision | undefined>;
}

export async function governanceOf(grant: Governed): Promise<Governance> {
  const config = await configOf(grant.application_id as ApplicationId);
  const workspace = workspaceOf(config, grant);
  const policyId = workspace?.policy_id;
  return {
    limits: (policyId && config.policies.get(policyId)?.limits) || {},
    async decide(trigger, input) {
      const rules = (workspace?.rule_ids ?? [])
        .map((id) => config.rules.get(id))
        .filter((r): r is RuleRecord => !!r && r.enabled && r.trigger === trigger);
      if (!rules.length) return undefined;
      const found = await db.membership(candidates(rules, input, config.lists));
      return { ...evaluate(rules, input, config.lists, (listId, value) => found.has(listId, value)), input };
    },
  };
}

/** The evaluation record of a decision (README: kept 30 days). */
export function evaluationOf(
  grant: { id: GrantId; application_id: string },
  stage: Stage,
  decision: Decision,
  messageId: string | null,
  actions: Partial<AppliedActions> = {},
): EvaluationRecord {
  const { input } = decision;
  return {
    id: newId('evaluation'),
    application_id: grant.application_id as ApplicationId,
    grant_id: grant.id,
    message_id: messageId,
    evaluated_at: clock.nowSeconds(),
    evaluation_stage: stage,
    evaluation_input: {
      ...(input.from
        ? { from_address: input.from.address, from_domain: input.from.domain, from_tld: input.from.tld }
        : {}),
      ...(input.recipients.length
        ? {
            recipient_addresses: input.recipients.map((r) => r.address),
            recipient_domains: [...new Set(input.recipients.map((r) => r.domain))],
            recipient_tlds: [...new Set(input.recipients.map((r) => r.tld))],
          }
        : {}),
      ...(input.outboundType ? { outbound_type: input.outboundType } : {}),
    },
    matched_rule_ids: decision.matched.map((r) => r.id),
    applied_actions: { ...decision.actions, ...actions },
  };
}

export const recordEvaluation = (record: EvaluationRecord) => db.putEvaluation(record);

/** The rule that blocked (the first matched with a block action), for error messages. */
export const blockingRule = (decision: Decision) =>
  decision.matched.find((r) => r.actions.some((a) => a.type === 'block'));

export type { WorkspaceId };
