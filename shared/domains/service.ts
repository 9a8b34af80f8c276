import { randomBytes } from 'node:crypto';
import type { ApplicationContext } from '#shared/caller';
import { env } from '#shared/config';
import { seal } from '#shared/crypto/sealed';
import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/cursor';
import { TransactionConditionError } from '#shared/db/transact';
import { newDkimKey } from '#shared/domains/dkim';
import { checkRecord, requiredRecord, type CheckOutcome } from '#shared/domains/records';
import * as store from '#shared/domains/store';
import { CONDITIONS, type DomainRecord } from '#shared/domains/store';
import { ConflictError, NotFoundError } from '#shared/errors';
import { newId, parseId, type ApplicationId } from '#shared/ids';
import { clock } from '#shared/time';
import { DOMAIN_RECORD_TYPES, type CreateDomainBody, type DomainRecordType } from '#schemas/domains';

/**
 * The calling application's email domains (`/v3/admin/domains`): registered by name, then proven by
 * DNS records it publishes (`info` says which, `verify` reads them through the deployment's
 * resolver). Verifying the ownership record takes the name for the application across the
 * deployment: another application can then neither register nor verify it (409) until the domain is
 * deleted. Verified domains are what transactional sends leave from, and, once an application has
 * domains, where its Agent Accounts live (shared/domains/agent-accounts.ts).
 */
const DKIM_SELECTOR = env.dkimSelector();
const REGION = env.domainRegion();
const SCOPE = 'domains';

export const domainView = (d: DomainRecord) => ({
  id: d.id,
  name: d.name,
  branded: false,
  domain_address: d.domain_address,
  organization_id: d.application_id,
  region: REGION,
  verified_ownership: d.verified.ownership,
  verified_dkim: d.verified.dkim,
  verified_spf: d.verified.spf,
  verified_mx: d.verified.mx,
  verified_feedback: d.verified.feedback,
  verified_dmarc: false,
  verified_arc: false,
  created_at: d.created_at,
  updated_at: d.updated_at,
});

const notFound = (id: string) => new NotFoundError(`Domain '${id.slice(0, 64)}' not found`);
const verifiedElsewhere = (name: string) =>
  new ConflictError(
    `The domain ${name} is verified by another application: a domain name belongs to one application at a time`,
  );

export async function requireDomain(appId: ApplicationId, rawId: string): Promise<DomainRecord> {
  const id = parseId('domain', rawId);
  const domain = id ? await store.getDomain(appId, id) : undefined;
  if (!domain) throw notFound(rawId);
  return domain;
}

/** Whether another application holds the verified name. */
async function heldByAnother(appId: ApplicationId, name: string): Promise<boolean> {
  const owner = await store.getVerifiedOwner(name);
  return owner !== undefined && owner.application_id !== appId;
}

export async function createDomain(app: ApplicationContext, body: CreateDomainBody) {
  const address = body.domain_address.toLowerCase();
  if (await heldByAnother(app.applicationId, address)) throw verifiedElsewhere(address);
  const existing = await store.getDomainByName(app.applicationId, address);
  if (existing) throw alreadyRegistered(existing);
  const id = newId('domain');
  const key = await newDkimKey();
  const now = clock.nowSeconds();
  const domain: DomainRecord = {
    id,
    application_id: app.applicationId,
    name: body.name,
    domain_address: address,
    verification_token: randomBytes(24).toString('base64url'),
    dkim_selector: DKIM_SELECTOR,
    dkim_public_key: key.publicKey,
    dkim_private_key: await seal(
      key.privateKeyPem,
      store.DKIM_SEAL_PURPOSE,
      store.domainSealContext(app.applicationId, id),
    ),
    verified: Object.fromEntries(DOMAIN_RECORD_TYPES.map((t) => [t, false])) as DomainRecord['verified'],
    checks: {},
    created_at: now,
    updated_at: now,
  };
  try {
    await store.insertDomain(domain);
  } catch (error) {
    if (!(error instanceof TransactionConditionError)) throw error;
    if (error.has(CONDITIONS.verifiedElsewhere)) throw verifiedElsewhere(address);
    const raced = await store.getDomainByName(app.applicationId, address);
    throw raced ? alreadyRegistered(raced) : error;
  }
  return domainView(domain);
}

const alreadyRegistered = (d: DomainRecord) =>
  new ConflictError(`This application already registered the domain ${d.domain_address} (${d.id})`);

export async function listDomains(app: ApplicationContext, limit: number, pageToken?: string) {
  const before = pageToken ? decodeBeforeCursor(pageToken, SCOPE, 'domain') : undefined;
  const page = await store.listDomains(app.applicationId, limit, before);
  return {
    items: page.items.map(domainView),
    nextCursor: page.last ? encodeBeforeCursor(SCOPE, page.last) : undefined,
  };
}

export const getDomain = async (app: ApplicationContext, id: string) =>
  domainView(await requireDomain(app.applicationId, id));

export async function updateDomain(app: ApplicationContext, id: string, name: string) {
  const updated = await store.renameDomain(await requireDomain(app.applicationId, id), name, clock.nowSeconds());
  if (!updated) throw notFound(id);
  return domainView(updated);
}

/** Deletes a domain; a verification committed meanwhile is read again and released with it. */
export async function deleteDomain(app: ApplicationContext, id: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const domain = await requireDomain(app.applicationId, id);
    try {
      await store.removeDomain(domain);
      return;
    } catch (error) {
      if (!(error instanceof TransactionConditionError) || !error.has(CONDITIONS.domain) || attempt >= 2) throw error;
    }
  }
}

/** The answer of `info` and `verify`: the record of `type` to publish and where its verification stands. */
function verificationView(domain: DomainRecord, type: DomainRecordType, outcome: CheckOutcome, at: number) {
  const record = requiredRecord(domain, type);
  return {
    domain_id: domain.id,
    attempt: { type, options: record },
    status: outcome.status,
    created_at: at,
    message: outcome.message,
    ...(outcome.found ? { found: outcome.found } : {}),
  };
}

/** `info`: the record of one type to publish; its status is the last check's (verified stays done). */
export async function domainInfo(app: ApplicationContext, id: string, type: DomainRecordType) {
  const domain = await requireDomain(app.applicationId, id);
  const record = requiredRecord(domain, type);
  const last = domain.checks[type];
  if (domain.verified[type])
    return verificationView(
      domain,
      type,
      { status: 'done', message: `The ${type} record is verified` },
      last?.checked_at ?? domain.updated_at,
    );
  const host = record.host === '@' ? domain.domain_address : `${record.host}.${domain.domain_address}`;
  const todo = `Publish a ${record.type} record at ${host} with the value ${record.value}, then verify it (POST /v3/admin/domains/${domain.id}/verify with type ${type})`;
  return last
    ? verificationView(domain, type, { status: last.status, message: `${last.message}. ${todo}` }, last.checked_at)
    : verificationView(domain, type, { status: 'pending', message: todo }, domain.created_at);
}

/**
 * `verify`: reads the record of one type through the deployment's resolver and records what it found.
 * A resolver that does not answer is a `pending` answer that changes nothing (never a 5xx); a matching
 * ownership record takes the name for the application (409 when another application holds it).
 */
export async function verifyDomain(app: ApplicationContext, id: string, type: DomainRecordType) {
  const domain = await requireDomain(app.applicationId, id);
  if (type === 'ownership' && (await heldByAnother(app.applicationId, domain.domain_address)))
    throw verifiedElsewhere(domain.domain_address);
  const outcome = await checkRecord(domain, type);
  const now = clock.nowSeconds();
  if (outcome.status === 'pending') return verificationView(domain, type, outcome, now);
  const check = { status: outcome.status, message: outcome.message, checked_at: now };
  if (type === 'ownership' && outcome.status === 'done') {
    try {
      await store.markOwnershipVerified(domain, check);
    } catch (error) {
      if (!(error instanceof TransactionConditionError)) throw error;
      if (error.has(CONDITIONS.verifiedElsewhere)) throw verifiedElsewhere(domain.domain_address);
      throw notFound(id);
    }
  } else if (!(await store.recordCheck(domain, type, check, outcome.status === 'done'))) throw notFound(id);
  return verificationView(domain, type, outcome, now);
}
