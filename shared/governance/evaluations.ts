import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/cursor';
import * as db from '#shared/db/governance';
import type { GrantRecord } from '#shared/db/grants';

/** GET /v3/grants/{grant_id}/rule-evaluations: what the rules decided for an account, newest first. */
export async function listEvaluations(grant: GrantRecord, query: { page_token?: string }, limit: number) {
  const before = query.page_token ? decodeBeforeCursor(query.page_token, 'evaluations', 'evaluation') : undefined;
  const page = await db.listEvaluations(grant.id, { limit, before });
  return {
    items: page.items.map((e) => ({
      id: e.id,
      object: 'rule_evaluation' as const,
      grant_id: e.grant_id,
      message_id: e.message_id,
      evaluated_at: e.evaluated_at,
      evaluation_stage: e.evaluation_stage,
      evaluation_input: e.evaluation_input,
      matched_rule_ids: e.matched_rule_ids,
      applied_actions: e.applied_actions,
      application_id: e.application_id,
      created_at: e.evaluated_at,
    })),
    nextCursor: page.last ? encodeBeforeCursor('evaluations', page.last) : undefined,
  };
}
