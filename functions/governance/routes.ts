import {
  AssignResult,
  AutoGroupResult,
  CreateListBody,
  CreatePolicyBody,
  CreateRuleBody,
  CreateWorkspaceBody,
  ListItemObject,
  ListItemsBody,
  ListObject,
  ManualAssignBody,
  PageOnlyQuery,
  PolicyObject,
  RuleEvaluationObject,
  RuleObject,
  UpdateListBody,
  UpdatePolicyBody,
  UpdateRuleBody,
  UpdateWorkspaceBody,
  WorkspaceObject,
} from '#schemas/governance';
import type { RouteTable } from '#shared/http/route';

/** Governance of Agent Accounts: lists, rules, workspaces, and the rule evaluations of a grant. */
export const routes = {
  createList: { method: 'POST', path: '/v3/lists', summary: 'Create a typed list (domain, tld or address)', body: CreateListBody, response: ListObject, status: 201 },
  listLists: { method: 'GET', path: '/v3/lists', summary: 'Lists of the application', query: PageOnlyQuery, response: ListObject, responseKind: 'list' },
  getList: { method: 'GET', path: '/v3/lists/{list_id}', summary: 'One list', response: ListObject },
  updateList: { method: 'PUT', path: '/v3/lists/{list_id}', summary: "Rename a list or change its description (its type cannot change)", body: UpdateListBody, response: ListObject },
  deleteList: { method: 'DELETE', path: '/v3/lists/{list_id}', summary: 'Delete a list; its items are removed in the background, rules stop matching it at once', responseKind: 'empty' },
  addListItems: { method: 'POST', path: '/v3/lists/{list_id}/items', summary: 'Add up to 1000 values (normalized; duplicates ignored; any invalid value refuses the request)', body: ListItemsBody, response: ListObject },
  listListItems: { method: 'GET', path: '/v3/lists/{list_id}/items', summary: 'Values of a list, in value order', query: PageOnlyQuery, response: ListItemObject, responseKind: 'list' },
  removeListItems: { method: 'DELETE', path: '/v3/lists/{list_id}/items', summary: 'Remove up to 1000 values (values not in the list are ignored)', body: ListItemsBody, response: ListObject },

  createRule: { method: 'POST', path: '/v3/rules', summary: 'Create a rule', body: CreateRuleBody, response: RuleObject, status: 201 },
  listRules: { method: 'GET', path: '/v3/rules', summary: 'Rules of the application', query: PageOnlyQuery, response: RuleObject, responseKind: 'list' },
  getRule: { method: 'GET', path: '/v3/rules/{rule_id}', summary: 'One rule', response: RuleObject },
  updateRule: { method: 'PUT', path: '/v3/rules/{rule_id}', summary: 'Change a rule (fields given replace those stored)', body: UpdateRuleBody, response: RuleObject },
  deleteRule: { method: 'DELETE', path: '/v3/rules/{rule_id}', summary: 'Delete a rule (workspaces stop naming it)', responseKind: 'empty' },

  createPolicy: { method: 'POST', path: '/v3/policies', summary: 'Create a policy (limits of the accounts of the workspaces that name it)', body: CreatePolicyBody, response: PolicyObject, status: 201 },
  listPolicies: { method: 'GET', path: '/v3/policies', summary: 'Policies of the application', query: PageOnlyQuery, response: PolicyObject, responseKind: 'list' },
  getPolicy: { method: 'GET', path: '/v3/policies/{policy_id}', summary: 'One policy', response: PolicyObject },
  updatePolicy: { method: 'PUT', path: '/v3/policies/{policy_id}', summary: 'Change a policy (fields given replace those stored)', body: UpdatePolicyBody, response: PolicyObject },
  deletePolicy: { method: 'DELETE', path: '/v3/policies/{policy_id}', summary: 'Delete a policy (workspaces naming it fall back to the defaults)', responseKind: 'empty' },

  listWorkspaces: { method: 'GET', path: '/v3/workspaces', summary: 'Workspaces of the application (the default one first; created on first use)', query: PageOnlyQuery, response: WorkspaceObject, responseKind: 'list' },
  createWorkspace: { method: 'POST', path: '/v3/workspaces', summary: 'Create a workspace', body: CreateWorkspaceBody, response: WorkspaceObject, status: 201 },
  autoGroup: { method: 'POST', path: '/v3/workspaces/auto-group', summary: 'Put existing Agent Accounts in the auto-group workspace of their domain', response: AutoGroupResult },
  getWorkspace: { method: 'GET', path: '/v3/workspaces/{workspace_id}', summary: 'One workspace', response: WorkspaceObject },
  updateWorkspace: { method: 'PATCH', path: '/v3/workspaces/{workspace_id}', summary: 'Change a workspace (rule_ids, policy_id, domain, auto_group, name)', body: UpdateWorkspaceBody, response: WorkspaceObject },
  deleteWorkspace: { method: 'DELETE', path: '/v3/workspaces/{workspace_id}', summary: 'Delete a workspace (not the default one)', responseKind: 'empty' },
  manualAssign: { method: 'POST', path: '/v3/workspaces/{workspace_id}/manual-assign', summary: 'Put Agent Accounts in the workspace', body: ManualAssignBody, response: AssignResult },

  listRuleEvaluations: {
    method: 'GET',
    path: '/v3/grants/{grant_id}/rule-evaluations',
    summary: 'Rule evaluations of an Agent Account, newest first (kept 30 days)',
    query: PageOnlyQuery,
    response: RuleEvaluationObject,
    responseKind: 'list',
  },
} as const satisfies RouteTable;
