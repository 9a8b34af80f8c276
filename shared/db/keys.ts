/**
 * Every DynamoDB key of the single table is built here, and only here.
 *
 * Attributes: `pk`, `sk` (table), `gsi1pk`/`gsi1sk` (GSI1, reserved for later access patterns),
 * `expires_at` (TTL, epoch seconds). Values carry an entity prefix (`grant#grant_01…`) so a query on
 * one entity's partition or prefix can never return another entity.
 *
 * | Access pattern                                   | Index | pk                   | sk                    | Function            |
 * |--------------------------------------------------|-------|----------------------|-----------------------|---------------------|
 * | Application by ID                                | table | app#<app_id>         | app                   | applicationKey      |
 * | Application by API key (SHA-256 of the key)      | table | apikey#<sha256>      | apikey                | apiKeyKey           |
 * | Grant by ID within its application               | table | app#<app_id>         | grant#<grant_id>      | grantKey            |
 * | Grants of an application, newest first           | table | app#<app_id>         | begins_with grant#    | grantsOfApplication |
 * | Grant by email within an application (unique)    | table | app#<app_id>         | email#<email>         | grantEmailKey       |
 * | Grant by external ID within an application (uniq)| table | app#<app_id>         | external#<external_id>| grantExternalIdKey  |
 * | Agent Account by address, deployment-wide (uniq) | table | agent#<email>        | agent                 | agentAddressKey     |
 *
 * Uniqueness is enforced with conditional puts of the `email#`, `external#` and `agent#` items in
 * the same transaction as the grant item, never by reading first.
 */
import type { ApplicationId, GrantId } from '#shared/ids';

export interface Key {
  pk: string;
  sk: string;
}

/** Application by ID. */
export const applicationKey = (appId: ApplicationId): Key => ({ pk: `app#${appId}`, sk: 'app' });

/** Application by API key hash. */
export const apiKeyKey = (keyHash: string): Key => ({ pk: `apikey#${keyHash}`, sk: 'apikey' });

/** Grant by ID, scoped to its application: another application's ID can never match. */
export const grantKey = (appId: ApplicationId, grantId: GrantId): Key => ({
  pk: `app#${appId}`,
  sk: `grant#${grantId}`,
});

/** Query: the grants of an application (sk prefix; IDs sort by creation time). */
export const grantsOfApplication = (appId: ApplicationId) => ({
  pk: `app#${appId}`,
  skPrefix: 'grant#',
});

/** Uniqueness and lookup of a grant by email address within an application. */
export const grantEmailKey = (appId: ApplicationId, email: string): Key => ({
  pk: `app#${appId}`,
  sk: `email#${email.toLowerCase()}`,
});

/** Uniqueness and lookup of a grant by the application's own external ID. */
export const grantExternalIdKey = (appId: ApplicationId, externalId: string): Key => ({
  pk: `app#${appId}`,
  sk: `external#${externalId}`,
});

/** Deployment-wide ownership of an Agent Account address (inbound mail routing, cross-app uniqueness). */
export const agentAddressKey = (email: string): Key => ({ pk: `agent#${email.toLowerCase()}`, sk: 'agent' });
