import { pageSize } from '#shared/answer-limits';
import { empty, list, ok } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import * as evaluations from '#shared/governance/evaluations';
import * as lists from '#shared/governance/lists';
import * as policies from '#shared/governance/policies';
import * as rules from '#shared/governance/rules';
import * as workspaces from '#shared/governance/workspaces';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

const page = <T extends object>(p: { items: T[]; nextCursor?: string | undefined }) => list(p.items, p.nextCursor);

export const handler = httpApi<typeof routes>(generated, {
  createList: async ({ app, body }) => ok(await lists.createList(app.applicationId, body)),
  listLists: async ({ app, query }) => page(await lists.listLists(app.applicationId, query, pageSize(query.limit))),
  getList: async ({ app, params }) => ok(lists.listView(await lists.requireList(app.applicationId, params.list_id))),
  updateList: async ({ app, params, body }) => ok(await lists.updateList(app.applicationId, params.list_id, body)),
  deleteList: async ({ app, params }) => {
    await lists.deleteList(app.applicationId, params.list_id);
    return empty();
  },
  addListItems: async ({ app, params, body }) => ok(await lists.addItems(app.applicationId, params.list_id, body)),
  listListItems: async ({ app, params, query }) =>
    page(await lists.listItems(app.applicationId, params.list_id, query, pageSize(query.limit))),
  removeListItems: async ({ app, params, body }) =>
    ok(await lists.removeItems(app.applicationId, params.list_id, body)),

  createRule: async ({ app, body }) => ok(await rules.createRule(app.applicationId, body)),
  listRules: async ({ app, query }) => page(await rules.listRules(app.applicationId, query, pageSize(query.limit))),
  getRule: async ({ app, params }) => ok(rules.ruleView(await rules.requireRule(app.applicationId, params.rule_id))),
  updateRule: async ({ app, params, body }) => ok(await rules.updateRule(app.applicationId, params.rule_id, body)),
  deleteRule: async ({ app, params }) => {
    await rules.deleteRule(app.applicationId, params.rule_id);
    return empty();
  },

  createPolicy: async ({ app, body }) => ok(await policies.createPolicy(app.applicationId, body)),
  listPolicies: async ({ app, query }) =>
    page(await policies.listPolicies(app.applicationId, query, pageSize(query.limit))),
  getPolicy: async ({ app, params }) =>
    ok(policies.policyView(await policies.requirePolicy(app.applicationId, params.policy_id))),
  updatePolicy: async ({ app, params, body }) =>
    ok(await policies.updatePolicy(app.applicationId, params.policy_id, body)),
  deletePolicy: async ({ app, params }) => {
    await policies.deletePolicy(app.applicationId, params.policy_id);
    return empty();
  },

  listWorkspaces: async ({ app, query }) =>
    page(await workspaces.listWorkspaces(app.applicationId, query, pageSize(query.limit))),
  createWorkspace: async ({ app, body }) => ok(await workspaces.createWorkspace(app.applicationId, body)),
  autoGroup: async ({ app }) => ok(await workspaces.autoGroup(app.applicationId)),
  getWorkspace: async ({ app, params }) => ok(await workspaces.getWorkspace(app.applicationId, params.workspace_id)),
  updateWorkspace: async ({ app, params, body }) =>
    ok(await workspaces.updateWorkspace(app.applicationId, params.workspace_id, body)),
  deleteWorkspace: async ({ app, params }) => {
    await workspaces.deleteWorkspace(app.applicationId, params.workspace_id);
    return empty();
  },
  manualAssign: async ({ app, params, body }) =>
    ok(await workspaces.manualAssign(app.applicationId, params.workspace_id, body)),

  listRuleEvaluations: async ({ grant, query }) =>
    page(await evaluations.listEvaluations(grant, query, pageSize(query.limit))),
});
