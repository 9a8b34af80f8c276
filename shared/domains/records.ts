import { env } from '#shared/config';
import { resolveMx, resolveTxt, type Lookup } from '#shared/domains/dns';
import type { DomainRecord } from '#shared/domains/store';
import type { DomainRecordType } from '#schemas/domains';

/**
 * The DNS records a domain publishes, one per type, and how a lookup is judged against them. Each
 * follows from the domain (its random token, its DKIM key) and the deployment's settings: the inbound
 * MX host (INBOUND_MX_HOST), the SPF include (SPF_INCLUDE), the bounce MX host (FEEDBACK_MX_HOST).
 */
const INBOUND_MX_HOST = env.inboundMxHost().toLowerCase();
const SPF_INCLUDE = env.spfInclude().toLowerCase();
const FEEDBACK_MX_HOST = env.feedbackMxHost().toLowerCase();
/** The subdomain whose MX takes bounces and complaints (the MAIL FROM domain). */
export const FEEDBACK_SUBDOMAIN = 'bounces';
/** The ownership TXT record's value is this prefix and the domain's token. */
export const OWNERSHIP_PREFIX = 'switchboard-verification=';
const MX_PRIORITY = 10;

/** One record to publish: `host` relative to the domain (`@`: the domain itself). */
export interface RequiredRecord {
  host: string;
  type: 'TXT' | 'MX';
  value: string;
  priority?: number;
}

export const dkimRecordValue = (publicKey: string) => `v=DKIM1; k=rsa; p=${publicKey}`;

export function requiredRecord(domain: DomainRecord, type: DomainRecordType): RequiredRecord {
  switch (type) {
    case 'ownership':
      return { host: '@', type: 'TXT', value: `${OWNERSHIP_PREFIX}${domain.verification_token}` };
    case 'mx':
      return { host: '@', type: 'MX', value: INBOUND_MX_HOST, priority: MX_PRIORITY };
    case 'spf':
      return { host: '@', type: 'TXT', value: `v=spf1 include:${SPF_INCLUDE} ~all` };
    case 'dkim':
      return {
        host: `${domain.dkim_selector}._domainkey`,
        type: 'TXT',
        value: dkimRecordValue(domain.dkim_public_key),
      };
    case 'feedback':
      return { host: FEEDBACK_SUBDOMAIN, type: 'MX', value: FEEDBACK_MX_HOST, priority: MX_PRIORITY };
  }
}

/** The full name a record is published at. */
export const recordName = (domain: DomainRecord, record: RequiredRecord) =>
  record.host === '@' ? domain.domain_address : `${record.host}.${domain.domain_address}`;

/** What a check concluded: `pending` when no resolver answered (nothing was learnt). */
export interface CheckOutcome {
  status: 'done' | 'failed' | 'pending';
  message: string;
  /** What the resolver answered at that name, for the client to compare. */
  found?: string[];
}

/** The tags of a DKIM record (`v=DKIM1; k=rsa; p=…`), whitespace inside values removed (RFC 6376 §3.2). */
function dkimTags(value: string): Map<string, string> {
  const tags = new Map<string, string>();
  for (const part of value.split(';')) {
    const at = part.indexOf('=');
    if (at > 0) tags.set(part.slice(0, at).trim().toLowerCase(), part.slice(at + 1).replace(/\s+/g, ''));
  }
  return tags;
}

/** Whether one published value satisfies the required record of `type`. */
function matches(type: DomainRecordType, required: RequiredRecord, value: string): boolean {
  switch (type) {
    case 'ownership':
      return value.trim() === required.value;
    case 'spf': {
      const terms = value.trim().toLowerCase().split(/\s+/);
      return terms[0] === 'v=spf1' && terms.some((t) => t.replace(/^[+?~-]/, '') === `include:${SPF_INCLUDE}`);
    }
    case 'dkim': {
      const tags = dkimTags(value);
      return tags.get('p') === dkimTags(required.value).get('p') && (tags.get('k') ?? 'rsa') === 'rsa';
    }
    case 'mx':
    case 'feedback':
      return value === required.value;
  }
}

/** Reads the record of `type` through the deployment's resolver and says whether it is published as required. */
export async function checkRecord(domain: DomainRecord, type: DomainRecordType): Promise<CheckOutcome> {
  const required = requiredRecord(domain, type);
  const name = recordName(domain, required);
  const result: Lookup<string> =
    required.type === 'TXT'
      ? await resolveTxt(name)
      : await resolveMx(name).then((r) =>
          r.kind === 'records' ? { kind: 'records', records: r.records.map((mx) => mx.exchange) } : r,
        );
  if (result.kind === 'unavailable')
    return {
      status: 'pending',
      message: `The ${type} record could not be checked: ${result.reason}. Nothing changed; verify again later`,
    };
  if (result.kind === 'nxdomain')
    return {
      status: 'failed',
      message: `${name} does not exist in DNS (NXDOMAIN): publish a ${required.type} record there with the value ${required.value}`,
      found: [],
    };
  const found = result.records;
  if (found.some((value) => matches(type, required, value)))
    return { status: 'done', message: `The ${type} record of ${name} is published as required`, found };
  return {
    status: 'failed',
    message: found.length
      ? `${name} has ${found.length} ${required.type} record${found.length > 1 ? 's' : ''}, none with the required value ${required.value}`
      : `${name} has no ${required.type} record: publish one with the value ${required.value}`,
    found,
  };
}
