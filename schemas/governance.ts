import type { FromSchema } from 'json-schema-to-ts';
import { Limit, PageToken, safeInteger } from '#schemas/common';

/**
 * Governance of Agent Accounts: lists (typed values rules match with `in_list`), rules (what happens
 * to mail received or sent), policies (limits) and workspaces (which rules and policy apply to which
 * accounts), plus the record of every rule evaluation. Shapes follow the published contract.
 */
const Name = { type: 'string', minLength: 1, maxLength: 256 } as const;
const Description = { type: 'string', maxLength: 1024 } as const;
const ObjectId = { type: 'string', minLength: 1, maxLength: 64 } as const;

export const LIST_TYPES = ['domain', 'tld', 'address'] as const;
export const MAX_LIST_ITEMS_PER_REQUEST = 1000;
/** The longest value a list holds (before normalization): longer ones are refused with every other invalid value of the request. */
export const MAX_LIST_VALUE_LENGTH = 500;
/** What the schema lets through to that check (a value no list could hold, refused alone). */
const MAX_LIST_VALUE_SENT = 4 * MAX_LIST_VALUE_LENGTH;

export const ListObject = {
  type: 'object',
  required: ['id', 'object', 'name', 'type', 'items_count', 'application_id', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['list'] },
    name: { type: 'string' },
    description: { type: 'string' },
    type: { type: 'string', enum: LIST_TYPES },
    items_count: { type: 'integer', description: 'Exact number of values in the list.' },
    application_id: { type: 'string' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const CreateListBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'type'],
  properties: { name: Name, description: Description, type: { type: 'string', enum: LIST_TYPES } },
} as const;
export type CreateListBody = FromSchema<typeof CreateListBody>;

export const UpdateListBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: Name,
    description: Description,
    type: { type: 'string', maxLength: 64, description: "Immutable: accepted only when it equals the list's type." },
  },
} as const;
export type UpdateListBody = FromSchema<typeof UpdateListBody>;

export const ListItemsBody = {
  type: 'object',
  additionalProperties: false,
  required: ['items'],
  properties: {
    items: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_LIST_ITEMS_PER_REQUEST,
      items: { type: 'string', maxLength: MAX_LIST_VALUE_SENT },
      description:
        'Values (trimmed and lowercased), each at most 500 characters; any invalid value refuses the whole request.',
    },
  },
} as const;
export type ListItemsBody = FromSchema<typeof ListItemsBody>;

export const ListItemObject = {
  type: 'object',
  required: ['id', 'list_id', 'value', 'created_at'],
  properties: {
    id: { type: 'string' },
    list_id: { type: 'string' },
    value: { type: 'string' },
    created_at: { type: 'integer' },
  },
} as const;

export const PageOnlyQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: Limit, page_token: PageToken },
} as const;
export type PageOnlyQuery = FromSchema<typeof PageOnlyQuery>;

// ------------------------------------------------------------------------------------------------
// Rules

export const RULE_FIELDS = [
  'from.address',
  'from.domain',
  'from.tld',
  'recipient.address',
  'recipient.domain',
  'recipient.tld',
  'outbound.type',
] as const;
export const RULE_OPERATORS = ['is', 'is_not', 'contains', 'in_list'] as const;
export const RULE_ACTIONS = [
  'block',
  'mark_as_spam',
  'assign_to_folder',
  'mark_as_read',
  'mark_as_starred',
  'archive',
  'trash',
] as const;

const Condition = {
  type: 'object',
  additionalProperties: false,
  required: ['field', 'operator', 'value'],
  properties: {
    field: { type: 'string', enum: RULE_FIELDS },
    operator: { type: 'string', enum: RULE_OPERATORS },
    value: {
      anyOf: [
        { type: 'string', minLength: 1, maxLength: 500 },
        { type: 'array', minItems: 1, maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 500 } },
      ],
      description: 'A string; with in_list, a list ID or an array of list IDs.',
    },
  },
} as const;

const Action = {
  type: 'object',
  additionalProperties: false,
  required: ['type'],
  properties: {
    type: { type: 'string', enum: RULE_ACTIONS },
    value: { type: 'string', minLength: 1, maxLength: 1024 },
  },
} as const;

const RuleFields = {
  name: Name,
  description: Description,
  priority: { type: 'integer', minimum: 0, maximum: 1000 },
  enabled: { type: 'boolean' },
  trigger: { type: 'string', enum: ['inbound', 'outbound'] },
  match: {
    type: 'object',
    additionalProperties: false,
    required: ['conditions'],
    properties: {
      operator: { type: 'string', enum: ['any', 'all'] },
      conditions: { type: 'array', minItems: 1, maxItems: 50, items: Condition },
    },
  },
  actions: { type: 'array', minItems: 1, maxItems: 20, items: Action },
} as const;

export const CreateRuleBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'match', 'actions'],
  properties: RuleFields,
} as const;
export type CreateRuleBody = FromSchema<typeof CreateRuleBody>;
export const UpdateRuleBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: RuleFields,
} as const;
export type UpdateRuleBody = FromSchema<typeof UpdateRuleBody>;

export const RuleObject = {
  type: 'object',
  required: [
    'id',
    'object',
    'name',
    'priority',
    'enabled',
    'trigger',
    'match',
    'actions',
    'application_id',
    'created_at',
    'updated_at',
  ],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['rule'] },
    ...RuleFields,
    application_id: { type: 'string' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

// ------------------------------------------------------------------------------------------------
// Workspaces

const WorkspaceFields = {
  name: Name,
  domain: { type: 'string', minLength: 1, maxLength: 253 },
  auto_group: { type: 'boolean' },
  policy_id: { anyOf: [ObjectId, { type: 'null' }] },
  rule_ids: { type: 'array', maxItems: 100, uniqueItems: true, items: ObjectId },
} as const;

export const CreateWorkspaceBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: WorkspaceFields,
} as const;
export type CreateWorkspaceBody = FromSchema<typeof CreateWorkspaceBody>;
export const UpdateWorkspaceBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: WorkspaceFields,
} as const;
export type UpdateWorkspaceBody = FromSchema<typeof UpdateWorkspaceBody>;

export const WorkspaceObject = {
  type: 'object',
  required: [
    'workspace_id',
    'object',
    'name',
    'default',
    'auto_group',
    'rule_ids',
    'application_id',
    'created_at',
    'updated_at',
  ],
  properties: {
    workspace_id: { type: 'string' },
    object: { type: 'string', enum: ['workspace'] },
    name: { type: 'string' },
    default: { type: 'boolean' },
    domain: { type: 'string' },
    auto_group: { type: 'boolean' },
    policy_id: { type: ['string', 'null'] },
    rule_ids: { type: 'array', items: { type: 'string' } },
    application_id: { type: 'string' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;

export const ManualAssignBody = {
  type: 'object',
  additionalProperties: false,
  required: ['grant_ids'],
  properties: { grant_ids: { type: 'array', minItems: 1, maxItems: 100, uniqueItems: true, items: ObjectId } },
} as const;
export type ManualAssignBody = FromSchema<typeof ManualAssignBody>;

export const AssignResult = {
  type: 'object',
  required: ['workspace_id', 'grant_ids'],
  properties: { workspace_id: { type: 'string' }, grant_ids: { type: 'array', items: { type: 'string' } } },
} as const;

export const AutoGroupResult = {
  type: 'object',
  required: ['assigned'],
  properties: {
    assigned: {
      type: 'array',
      items: { type: 'object', properties: { grant_id: { type: 'string' }, workspace_id: { type: 'string' } } },
    },
  },
} as const;

// ------------------------------------------------------------------------------------------------
// Rule evaluations

export const EVALUATION_STAGES = ['smtp_rcpt', 'inbox_processing', 'outbound_send'] as const;

export const RuleEvaluationObject = {
  type: 'object',
  required: [
    'id',
    'object',
    'grant_id',
    'evaluated_at',
    'evaluation_stage',
    'evaluation_input',
    'matched_rule_ids',
    'applied_actions',
  ],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['rule_evaluation'] },
    grant_id: { type: 'string' },
    message_id: { type: ['string', 'null'] },
    evaluated_at: { type: 'integer' },
    evaluation_stage: { type: 'string', enum: EVALUATION_STAGES },
    evaluation_input: {
      type: 'object',
      properties: {
        from_address: { type: 'string' },
        from_domain: { type: 'string' },
        from_tld: { type: 'string' },
        recipient_addresses: { type: 'array', items: { type: 'string' } },
        recipient_domains: { type: 'array', items: { type: 'string' } },
        recipient_tlds: { type: 'array', items: { type: 'string' } },
        outbound_type: { type: 'string', enum: ['compose', 'reply'] },
      },
    },
    matched_rule_ids: { type: 'array', items: { type: 'string' } },
    applied_actions: {
      type: 'object',
      properties: {
        blocked: { type: 'boolean' },
        marked_as_spam: { type: 'boolean' },
        marked_as_read: { type: 'boolean' },
        marked_starred: { type: 'boolean' },
        archived: { type: 'boolean' },
        trashed: { type: 'boolean' },
        folder_ids: { type: 'array', items: { type: 'string' } },
      },
    },
    application_id: { type: 'string' },
    created_at: { type: 'integer' },
  },
} as const;

// ------------------------------------------------------------------------------------------------
// Policies

/** The largest values a policy may set (this deployment's own maxima). */
export const POLICY_MAXIMA = {
  limit_attachment_size_limit: 25 * 1024 * 1024,
  limit_attachment_count_limit: 100,
  limit_size_total_mime: 26 * 1024 * 1024,
  limit_count_daily_message_received: 1_000_000,
  limit_count_daily_email_sent: 100_000,
} as const;

const Limits = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit_attachment_size_limit: { type: 'integer', minimum: 1, maximum: POLICY_MAXIMA.limit_attachment_size_limit },
    limit_attachment_count_limit: { type: 'integer', minimum: 0, maximum: POLICY_MAXIMA.limit_attachment_count_limit },
    limit_attachment_allowed_types: {
      type: 'array',
      maxItems: 100,
      uniqueItems: true,
      items: { type: 'string', pattern: '^[A-Za-z0-9!#$&^_.+-]+/[A-Za-z0-9!#$&^_.+*-]+$', maxLength: 255 },
    },
    limit_size_total_mime: { type: 'integer', minimum: 1024, maximum: POLICY_MAXIMA.limit_size_total_mime },
    limit_storage_total: safeInteger(1),
    limit_count_daily_message_received: {
      type: 'integer',
      minimum: 1,
      maximum: POLICY_MAXIMA.limit_count_daily_message_received,
    },
    limit_count_daily_email_sent: { type: 'integer', minimum: 1, maximum: POLICY_MAXIMA.limit_count_daily_email_sent },
    limit_inbox_retention_period: safeInteger(1),
    limit_spam_retention_period: safeInteger(1),
  },
} as const;

const SpamDetection = {
  type: 'object',
  additionalProperties: false,
  properties: {
    use_list_dnsbl: { type: 'boolean' },
    use_header_anomaly_detection: { type: 'boolean' },
    spam_sensitivity: { type: 'number', minimum: 0.1, maximum: 5 },
  },
} as const;

const PolicyFields = {
  name: Name,
  limits: Limits,
  rules: {
    type: 'array',
    maxItems: 100,
    uniqueItems: true,
    items: ObjectId,
    description: 'Legacy: rules are attached to workspaces.',
  },
  spam_detection: SpamDetection,
} as const;

export const CreatePolicyBody = {
  type: 'object',
  additionalProperties: false,
  required: ['name'],
  properties: PolicyFields,
} as const;
export type CreatePolicyBody = FromSchema<typeof CreatePolicyBody>;
export const UpdatePolicyBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: PolicyFields,
} as const;
export type UpdatePolicyBody = FromSchema<typeof UpdatePolicyBody>;
export type PolicyLimits = FromSchema<typeof Limits>;

export const PolicyObject = {
  type: 'object',
  required: ['id', 'object', 'name', 'limits', 'rules', 'spam_detection', 'application_id', 'created_at', 'updated_at'],
  properties: {
    id: { type: 'string' },
    object: { type: 'string', enum: ['policy'] },
    ...PolicyFields,
    application_id: { type: 'string' },
    created_at: { type: 'integer' },
    updated_at: { type: 'integer' },
  },
} as const;
