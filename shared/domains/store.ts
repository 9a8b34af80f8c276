import { GetCommand, QueryCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ConditionalCheckFailedException } from '@aws-sdk/client-dynamodb';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import {
  applicationDomainKey,
  applicationDomainNameKey,
  domainsOfApplication,
  itemAttributes,
  verifiedDomainKey,
} from '#shared/db/keys';
import { getRecord, listRecords } from '#shared/db/records';
import { transactWrite } from '#shared/db/transact';
import type { ApplicationId, DomainId } from '#shared/ids';
import type { SealPurpose } from '#shared/crypto/sealed';
import type { DomainRecordType } from '#schemas/domains';

/**
 * Storage of an application's email domains. Three kinds of items:
 * - the domain (`app#<app_id>#domain` / `<dom_id>`): its label, address, verification token, DKIM
 *   key (the private half sealed), what each record type's last check found, and which are verified;
 * - its name within the application (`app#<app_id>#domainname` / `<name>`): one registration of a
 *   name per application, and how a send or an Agent Account finds the domain by name;
 * - the verified name (`domain#<name>` / `verified`), deployment-wide: written when an application's
 *   ownership record is verified, on the condition that no other application holds it. Two
 *   applications verifying one name at once: one transaction wins, the other's condition fails.
 */

/** What the last check of one record type found (answered by `info` until the next check). */
export interface DomainCheck {
  status: 'done' | 'failed' | 'pending';
  message: string;
  checked_at: number;
}

export interface DomainRecord {
  id: DomainId;
  application_id: ApplicationId;
  name: string;
  /** Lowercase, without a trailing dot. */
  domain_address: string;
  /** Random, per domain: the ownership TXT record's value carries it. */
  verification_token: string;
  dkim_selector: string;
  /** Base64 of the DER SubjectPublicKeyInfo: the DKIM record's `p=`. */
  dkim_public_key: string;
  /** PEM of the private key, sealed (shared/crypto/sealed.ts) for this domain's item. */
  dkim_private_key: string;
  verified: Record<DomainRecordType, boolean>;
  checks: Partial<Record<DomainRecordType, DomainCheck>>;
  created_at: number;
  updated_at: number;
}

/** Who holds a verified domain name. */
export interface VerifiedDomainOwner {
  application_id: ApplicationId;
  domain_id: DomainId;
}

const BOOKKEEPING = ['entity'];

/** The failed conditions of insertDomain and markOwnershipVerified, by name. */
export const CONDITIONS = {
  /** The application already registered this name. */
  name: 'domain_name',
  /** Another application verified this name. */
  verifiedElsewhere: 'verified_name',
  /** The domain was deleted meanwhile. */
  domain: 'domain',
} as const;

/**
 * How a domain's DKIM private key is sealed: under a key of its own purpose, bound to the domain's own
 * item (domainSealContext), so that it opens for no other record and as no other kind of secret.
 */
export const DKIM_SEAL_PURPOSE = 'dkim-key' satisfies SealPurpose;

/** The context a domain's sealed DKIM key is bound to: its own item. */
export const domainSealContext = (appId: ApplicationId, id: DomainId) => {
  const key = applicationDomainKey(appId, id);
  return `${key.pk}/${key.sk}`;
};

/** A condition that holds when nobody, or this application's domain `id`, holds the verified name. */
const heldByNoOtherApplication = {
  ConditionExpression: 'attribute_not_exists(pk) OR (application_id = :app AND domain_id = :id)',
};

/**
 * Stores a new domain with its name's registration, unless the application already registered the
 * name or another application verified it. Failed conditions by name: CONDITIONS.name,
 * CONDITIONS.verifiedElsewhere.
 */
export async function insertDomain(domain: DomainRecord): Promise<void> {
  await transactWrite([
    [
      'domain_item',
      {
        Put: {
          TableName: TABLE_NAME,
          Item: { ...applicationDomainKey(domain.application_id, domain.id), entity: 'domain', ...domain },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
    [
      CONDITIONS.name,
      {
        Put: {
          TableName: TABLE_NAME,
          Item: {
            ...applicationDomainNameKey(domain.application_id, domain.domain_address),
            entity: 'domain_name',
            domain_id: domain.id,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
    ],
    [
      CONDITIONS.verifiedElsewhere,
      {
        ConditionCheck: {
          TableName: TABLE_NAME,
          Key: verifiedDomainKey(domain.domain_address),
          ...heldByNoOtherApplication,
          ExpressionAttributeValues: { ':app': domain.application_id, ':id': domain.id },
        },
      },
    ],
  ]);
}

/** A domain of an application by ID (strongly consistent: a check just recorded is read back). */
export async function getDomain(appId: ApplicationId, id: DomainId): Promise<DomainRecord | undefined> {
  const { Item } = await dynamo.send(
    new GetCommand({ TableName: TABLE_NAME, Key: applicationDomainKey(appId, id), ConsistentRead: true }),
  );
  return Item ? itemAttributes<DomainRecord>(Item, ...BOOKKEEPING) : undefined;
}

/** A domain of an application by its name (`domain_address`). */
export async function getDomainByName(appId: ApplicationId, name: string): Promise<DomainRecord | undefined> {
  const ref = await getRecord<{ domain_id: DomainId }>(applicationDomainNameKey(appId, name), ...BOOKKEEPING);
  return ref ? getDomain(appId, ref.domain_id) : undefined;
}

/** A page of an application's domains, newest first, below the ID `before`. */
export const listDomains = (appId: ApplicationId, limit: number, before?: string) =>
  listRecords<DomainRecord>(domainsOfApplication(appId).pk, { limit, before }, ...BOOKKEEPING);

/** Whether the application registered any domain at all. */
export async function hasDomains(appId: ApplicationId): Promise<boolean> {
  const { Items = [] } = await dynamo.send(
    new QueryCommand({
      TableName: TABLE_NAME,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': domainsOfApplication(appId).pk },
      ProjectionExpression: 'pk',
      Limit: 1,
    }),
  );
  return Items.length > 0;
}

/** The application holding a verified domain name, if any. */
export const getVerifiedOwner = (name: string) =>
  getRecord<VerifiedDomainOwner>(verifiedDomainKey(name), ...BOOKKEEPING);

/** Runs a conditional update of a domain's item; undefined when the domain no longer exists. */
async function updateDomain(
  domain: Pick<DomainRecord, 'application_id' | 'id'>,
  expression: string,
  values: Record<string, unknown>,
  names: Record<string, string> = {},
): Promise<DomainRecord | undefined> {
  try {
    const { Attributes } = await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: applicationDomainKey(domain.application_id, domain.id),
        UpdateExpression: expression,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: values,
        ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
        ReturnValues: 'ALL_NEW',
      }),
    );
    return itemAttributes<DomainRecord>(Attributes!, ...BOOKKEEPING);
  } catch (error) {
    if (error instanceof ConditionalCheckFailedException) return undefined;
    throw error;
  }
}

/** Changes a domain's label; undefined when the domain no longer exists. */
export const renameDomain = (domain: DomainRecord, name: string, now: number) =>
  updateDomain(domain, 'SET #name = :name, updated_at = :now', { ':name': name, ':now': now }, { '#name': 'name' });

/**
 * Records what a check of one record type found; `verified` sets its flag (a failed check never
 * clears one: a record proven once stays proven). Undefined when the domain no longer exists.
 */
export const recordCheck = (domain: DomainRecord, type: DomainRecordType, check: DomainCheck, verified: boolean) =>
  updateDomain(
    domain,
    `SET checks.#type = :check, updated_at = :now${verified ? ', verified.#type = :true' : ''}`,
    { ':check': check, ':now': check.checked_at, ...(verified ? { ':true': true } : {}) },
    { '#type': type },
  );

/**
 * Records a verified ownership check and takes the domain's name for the application, both or
 * neither. Failed conditions by name: CONDITIONS.verifiedElsewhere (another application holds the
 * name), CONDITIONS.domain (the domain was deleted meanwhile).
 */
export async function markOwnershipVerified(domain: DomainRecord, check: DomainCheck): Promise<void> {
  await transactWrite([
    [
      CONDITIONS.verifiedElsewhere,
      {
        Put: {
          TableName: TABLE_NAME,
          Item: {
            ...verifiedDomainKey(domain.domain_address),
            entity: 'verified_domain',
            application_id: domain.application_id,
            domain_id: domain.id,
            verified_at: check.checked_at,
          },
          ...heldByNoOtherApplication,
          ExpressionAttributeValues: { ':app': domain.application_id, ':id': domain.id },
        },
      },
    ],
    [
      CONDITIONS.domain,
      {
        Update: {
          TableName: TABLE_NAME,
          Key: applicationDomainKey(domain.application_id, domain.id),
          UpdateExpression: 'SET checks.#type = :check, verified.#type = :true, updated_at = :now',
          ConditionExpression: 'attribute_exists(pk)',
          ExpressionAttributeNames: { '#type': 'ownership' },
          ExpressionAttributeValues: { ':check': check, ':true': true, ':now': check.checked_at },
        },
      },
    ],
  ]);
}

/**
 * Deletes a domain, its name's registration and, when its ownership is verified, the verified name
 * (which another application may then verify). Committed only if the ownership flag is still as read:
 * a verification committed meanwhile fails CONDITIONS.domain (as does a domain already deleted), and
 * the caller reads the domain again.
 */
export async function removeDomain(domain: DomainRecord): Promise<void> {
  const owned = domain.verified.ownership;
  await transactWrite([
    [
      CONDITIONS.domain,
      {
        Delete: {
          TableName: TABLE_NAME,
          Key: applicationDomainKey(domain.application_id, domain.id),
          ConditionExpression: 'attribute_exists(pk) AND verified.ownership = :owned',
          ExpressionAttributeValues: { ':owned': owned },
        },
      },
    ],
    [
      'domain_name_release',
      {
        Delete: { TableName: TABLE_NAME, Key: applicationDomainNameKey(domain.application_id, domain.domain_address) },
      },
    ],
    ...(owned
      ? ([
          [
            'verified_name_release',
            {
              Delete: {
                TableName: TABLE_NAME,
                Key: verifiedDomainKey(domain.domain_address),
                ConditionExpression: 'domain_id = :id',
                ExpressionAttributeValues: { ':id': domain.id },
              },
            },
          ],
        ] as const)
      : []),
  ]);
}
