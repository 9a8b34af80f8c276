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
 * | API key of an application by ID / keys of an application, newest first (the description: name, expiry, its hash) | table | app#<app_id> | apikey#<key_id> | applicationApiKeyKey, apiKeysOfApplication |
 * | Grant by ID within its application               | table | app#<app_id>         | grant#<grant_id>      | grantKey            |
 * | Grants of an application, newest first           | table | app#<app_id>         | begins_with grant#    | grantsOfApplication |
 * | Grant by email within an application (unique)    | table | app#<app_id>         | email#<email>         | grantEmailKey       |
 * | Grant by external ID within an application (uniq)| table | app#<app_id>         | external#<external_id>| grantExternalIdKey  |
 * | Agent Account by address, deployment-wide (uniq) | table | agent#<email>        | agent                 | agentAddressKey     |
 * | Folder by ID / folders of a grant                | table | grant#<gid>#folder   | <folder_id>           | folderKey, foldersOfGrant |
 * | Folder name among its siblings (unique)          | table | grant#<gid>#folder   | name#<parent>#<name>  | folderNameKey       |
 * | Message by ID / messages newest first, by time   | table | grant#<gid>#msg      | <msg_id> (ULID)       | messageKey, messagesOfGrant |
 * | Messages matching one filter value, newest first | table | grant#<gid>#ix#<kind>| <msg_id>              | postingKey, postingPartition |
 * | Message by Message-ID header (threading, dedupe) | table | grant#<gid>#mid      | <Message-ID>          | messageIdHeaderKey  |
 * | Thread of the synced messages that reference a Message-ID | table | grant#<gid>#ref | <Message-ID> | referenceKey |
 * | Thread by ID                                     | table | grant#<gid>#thread   | <thread_id>           | threadKey           |
 * | Threads by latest message, newest first          | table | grant#<gid>#threads  | <latest msg_id>       | threadListKey, threadsOfGrant |
 * | Draft by ID / drafts newest first                | table | grant#<gid>#draft    | <draft_id>            | draftKey, draftsOfGrant |
 * | Template by ID / templates of a grant            | table | grant#<gid>#template | <template_id>         | templateKey, templatesOfGrant |
 * | Application template by ID / templates of an application (shared by its grants) | table | app#<app_id>#template | <atpl_id> | applicationTemplateKey, templatesOfApplication |
 * | Domain of an application by ID / its domains, newest first | table | app#<app_id>#domain | <dom_id> | applicationDomainKey, domainsOfApplication |
 * | Domain of an application by name (unique within it) | table | app#<app_id>#domainname | <domain name> | applicationDomainNameKey |
 * | Verified domain name, deployment-wide (uniq: one application) | table | domain#<domain name> | verified | verifiedDomainKey |
 * | Signature by ID / signatures of a grant          | table | grant#<gid>#signature| <signature_id>        | signatureKey, signaturesOfGrant |
 * | Send idempotency key (TTL 1 h)                   | table | grant#<gid>#idem     | <Idempotency-Key>     | idempotencyKey      |
 * | Transactional send idempotency key (TTL 1 h)    | table | app#<app_id>#idem    | <Idempotency-Key>     | transactionalIdempotencyKey |
 * | Daily send counter (TTL 2 days)                  | table | grant#<gid>#quota    | <YYYY-MM-DD>          | sendQuotaKey        |
 * | Daily receive counter (TTL 2 days)               | table | grant#<gid>#quota    | recv#<YYYY-MM-DD>     | receiveQuotaKey     |
 * | Webhook destination by ID / of an application    | table | app#<app_id>         | webhook#<wh_id>       | webhookKey, webhooksOfApplication |
 * | Every webhook destination (health sweep)         | table | webhooks             | <wh_id>               | webhookRegistryKey  |
 * | Delivery attempts of a destination, newest first | table | webhook#<wh_id>#attempts | <dlv_id> (TTL 30 d) | attemptKey, attemptsOfWebhook |
 * | Attempt counts per hour, and per minute inside it, one item per writer (health; readers sum them) | table | webhook#<wh_id>#stats | h#<hour>#<writer> (TTL 4 d) | statsKey |
 * | Outbox entry: a notification or job (TTL 2 d)    | table | outbox#<ntf_id|job_id> | outbox            | outboxKey           |
 * | Deliverability event of the mail transport, once announced (shared/deliverability/announce.ts; TTL 19 d) | table | deliverability#<event hash> | event | deliverabilityEventKey |
 * | Uploads of a grant not yet committed (TTL 1 h; uploads.ts) | table | grant#<gid>#uploads | <upl_id>       | uploadKey, uploadsOfGrant |
 * | Scheduled send by ID / newest first (TTL 30 d once closed) | table | grant#<gid>#schedule | <sch_id> (ULID) | scheduleKey, schedulesOfGrant |
 * | List, rule, policy, workspace by ID / of an application | table | app#<app_id> | list#, rule#, policy#, workspace#<id> | listKey, ruleKey, policyKey, workspaceKey, ...OfApplication |
 * | Governance version of an application (bumped by every change to those) | table | app#<app_id> | governance | governanceKey |
 * | Item of a list by value (membership is one key lookup) | table | list#<lst_id>#items | <value> | listItemKey, itemsOfList |
 * | Rule evaluations of a grant, newest first (TTL 30 d) | table | grant#<gid>#evaluations | <rev_id> (ULID) | evaluationKey, evaluationsOfGrant |
 * | Contact of the address book by ID / in creation order | table | grant#<gid>#contact | <ctc_id> | contactKey, contactsOfGrant |
 * | Contact collected from mail (ID derived from its address) | table | grant#<gid>#inboxcontact | <ctc_id> | contactKey, contactsOfGrant |
 * | Contact group by ID / groups of a grant | table | grant#<gid>#contactgroup | <ctg_id> | contactGroupKey, contactGroupsOfGrant |
 * | Contact group name among its siblings (unique) | table | grant#<gid>#contactgroup | name#<parent>#<name> | contactGroupNameKey |
 * | Calendar by ID / calendars of a grant (the primary one: cal_<the grant's ULID>) | table | grant#<gid>#calendar | <cal_id> | calendarKey, calendarsOfGrant |
 * | Event by ID in its calendar; an occurrence's override sorts after its series (`<master>_<key>`) | table | grant#<gid>#cal#<cal_id>#evt | <evt_id> | eventKey, eventsOfCalendar |
 * | Events of a calendar by time: copies per time bucket (shared/db/events.ts) | table | grant#<gid>#cal#<cal_id>#win#<bucket> | <start>#<evt_id> | windowKey, windowPartition |
 * | Event by iCalendar UID within a grant (invitations, replies, ical_uid filter) | table | grant#<gid>#icaluid | <uid> | icalUidKey |
 * | Scheduler configuration by ID (public pages and bookings reach it by ID alone) | table | schedcfg#<cfg_id> | config | configurationKey |
 * | Scheduler configurations of an application (copies of the above) | table | app#<app_id> | schedcfg#<cfg_id> | appConfigurationKey, configurationsOfApplication |
 * | Scheduler configuration by slug, deployment-wide (unique: the booking page's /scheduling/{slug} names the slug alone) | table | slug#<slug> | slug | configurationSlugKey |
 * | Scheduler session by SHA-256 of its token (TTL: its expiry) | table | schedses#<sha256> | session | sessionKey |
 * | Hosted OAuth flow by SHA-256 of its state (TTL 15 min) | table | oauthflow#<sha256> | flow | oauthFlowKey |
 * | Authorization code by SHA-256 (TTL 10 min, single use) | table | oauthcode#<sha256> | code | authorizationCodeKey |
 * | Access or refresh token by SHA-256 (access: TTL its expiry) | table | token#<sha256> | token | apiTokenKey |
 * | Tokens issued for a grant (revoked with it) | table | grant#<gid>#tokens | <sha256> | grantTokenKey, tokensOfGrant |
 * | A grant's provider tokens (sealed; refresh lease and version) | table | grant#<gid> | provider_tokens | providerTokensKey |
 * | A synced grant's sync state (lease, next run, folder checkpoints) | table | grant#<gid> | mail_sync | mailSyncKey |
 * | Provider B's lifecycle notifications waiting for the grant's next run | table | grant#<gid> | graph_lifecycle | graphLifecycleKey |
 * | Our metadata of a message a live provider keeps (provider A) | table | grant#<gid>#livemeta | msg#<message_id> | liveMetadataKey |
 * | Those messages by an indexed metadata pair, newest ID first | table | grant#<gid>#livemeta | pair#<key>#<sha256(value)>#<message_id> | liveMetadataPairKey, liveMetadataPairPrefix |
 * | Tracking of a sent message (its settings, opens, replies) / clicks of one of its links / its links (shared/tracking/records.ts); a transactional send's under its application | table | grant#<gid>#track, app#<app_id>#track | <msg_id>, <msg_id>#link#<index> | trackedMessageKey, trackedLinkKey, trackedLinksOf |
 * | A synced message's place on its server (folder, UIDVALIDITY, UID → message) | table | grant#<gid>#loc | <folder_id>#<uidvalidity>#<uid> | serverLocationKey, serverLocationsOf |
 * | A message a query_imap list answered, not synced (TTL 1 day) | table | grant#<gid>#direct | <msg_id> | directIdKey |
 * | Admin consent given for an application's provider credential | table | app#<app_id> | adminconsent#<provider>#<credential_id> | adminConsentKey |
 * | Booking by ID | table | booking#<bkg_id> | booking | bookingKey |
 * | Group event of a group configuration by its event ID (capacity, seats taken, the bookings holding them) / the configuration's group events | table | schedcfg#<cfg_id> | groupevent#<event_id> | groupEventKey, groupEventsOfConfiguration |
 * | Application settings (branding, hosted authentication page, its own request rate limit) and its redirect URI count: attributes of the application item | table | app#<app_id> | app | applicationKey |
 * | Redirect (callback) URI by ID / redirect URIs of an application | table | app#<app_id> | redirect_uri#<ruri_id> | redirectUriKey, redirectUrisOfApplication |
 * | Redirect URI by its URL as registered, unique within the application (the OAuth flow's exact match; registered before exact matching: by its parsed URL) | table | app#<app_id> | redirect_url#<sha256 of the URL> | redirectUrlKey |
 * | Desktop redirect URI on loopback http by its URL without the port (RFC 8252: any port matches) | table | app#<app_id> | redirect_loopback#<sha256 of the URL without port> | redirectLoopbackKey |
 * | Connector by provider (one per provider) / connectors of an application | table | app#<app_id> | connector#<provider> | connectorKey, connectorsOfApplication |
 * | Credential by ID / credentials of a provider's connector (sealed data; visible only with their connector's generation) | table | app#<app_id> | cred#<provider>#<cred_id> | credentialKey, credentialsOfProvider |
 * | Credential name within one connector generation (unique) | table | app#<app_id> | credname#<provider>#<generation>#<sha256 of the name> | credentialNameKey, credentialNamesOfConnector |
 * | Booked time of an organizer, one item per UTC day (the slot locks: a map booking → [start, end]; TTL a week after the day) | table | grant#<gid>#booked | <YYYY-MM-DD> | bookedDayKey |
 * | Search entries of a mailbox not yet read into its segments, in commit order: a stored message's tokens, a deleted message's tombstone (TTL 30 d; shared/db/search.ts) | table | grant#<gid>#search | <ULID taken just before the commit> | searchEntryKey, searchEntriesOf |
 * | Search manifest of a mailbox: its live segments (objects under grants/<gid>/search/), the entries already merged (watermark), the merge lease | table | grant#<gid> | search | searchManifestKey |
 * | Request rate bucket of an application, and of a grant (GCRA: its theoretical arrival time; TTL a minute after it goes idle; shared/db/rate-limits.ts) | table | ratelimit#app#<app_id>, ratelimit#grant#<app_id>#<gid> | bucket | applicationRateLimitKey, grantRateLimitKey |
 *
 * Message postings are the filter indexes of a mailbox that change with the message or that a
 * DynamoDB Query must read: one small item per (filter value, message), e.g. `ix#in:inbox`,
 * `ix#unread`, `ix#starred`, `ix#meta:key1=x`, `ix#thread:thr_…`. Their sort key is the message ID, a
 * ULID, so every filter reads newest first and `received_before/after` are key ranges on any of them.
 * They are derived from the message (shared/mailbox/postings.ts), so deleting a message or a whole
 * grant recomputes them instead of scanning. Full text, subject words, addresses and attachments,
 * which never change, live in the mailbox's search index instead (shared/mailbox/search-index.ts):
 * one search entry per stored message, folded by merges into immutable segments in S3. Messages
 * stored before the search index had postings `ix#text:…`, `ix#subj:…`, `ix#from:…`, `ix#attach`
 * too (legacy kinds, still removed with them).
 *
 * Uniqueness is enforced with conditional puts of the `email#`, `external#` and `agent#` items in
 * the same transaction as the grant item (and of the `slug#` item with its configuration), never by
 * reading first.
 */
import { createHash } from 'node:crypto';
import { KEY_BYTES } from '#shared/aws/key-bounds';
import type {
  ApiKeyId,
  DomainId,
  ApplicationId,
  CredentialId,
  RedirectUriId,
  DraftId,
  GrantId,
  JobId,
  MessageId,
  NotificationId,
  SignatureId,
  TemplateId,
  ApplicationTemplateId,
  ThreadId,
  ScheduleId,
  UploadId,
  WebhookId,
  ListId,
  RuleId,
  PolicyId,
  WorkspaceId,
  EvaluationId,
  CalendarId,
  ContactId,
  ContactGroupId,
  ConfigurationId,
  BookingId,
} from '#shared/ids';
import { ID_PREFIXES } from '#shared/ids';

export interface Key {
  pk: string;
  sk: string;
}

const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');

/**
 * A key value that holds a value from outside (a name, a header, a filter value) after `prefix`: the
 * value itself while the whole fits DynamoDB's bound for the attribute (so every key written before
 * this rule is unchanged), else the value's SHA-256 (`~sha256:<hex>`): a value of any length is
 * stored and found under one exact key, and DynamoDB never refuses it (shared/aws/key-bounds.ts).
 */
function fitted(attribute: 'pk' | 'sk', prefix: string, value: string): string {
  const raw = prefix + value;
  return raw.length * 3 <= KEY_BYTES[attribute] || Buffer.byteLength(raw, 'utf8') <= KEY_BYTES[attribute]
    ? raw
    : `${prefix}~sha256:${sha256(value)}`;
}

/** An item's own attributes: without its table keys and whatever bookkeeping attributes are named. */
export function itemAttributes<T>(item: Record<string, unknown>, ...bookkeeping: string[]): T {
  const { pk: _pk, sk: _sk, ...rest } = item;
  for (const name of bookkeeping) delete rest[name];
  return rest as T;
}

/** Application by ID. */
/** The partition of an application: the application item and what belongs to the application (grants, governance, webhooks, settings). */
export const applicationPartition = (appId: ApplicationId) => `app#${appId}`;
export const applicationKey = (appId: ApplicationId): Key => ({ pk: applicationPartition(appId), sk: 'app' });

/**
 * The request rate buckets (shared/db/rate-limits.ts): one item each, in a partition of its own, because
 * every request writes it; in the application's partition it would put that write load on the partition
 * that holds the application's grants and settings.
 */
export const applicationRateLimitKey = (appId: ApplicationId): Key => ({ pk: `ratelimit#app#${appId}`, sk: 'bucket' });
/** A grant's bucket is the application's too: a request naming another application's grant (a 404) cannot drain it. */
export const grantRateLimitKey = (appId: ApplicationId, grantId: GrantId): Key => ({
  pk: `ratelimit#grant#${appId}#${grantId}`,
  sk: 'bucket',
});

/** Application by API key hash. */
export const apiKeyKey = (keyHash: string): Key => ({ pk: `apikey#${keyHash}`, sk: 'apikey' });
/**
 * An API key as its application sees it, by ID, in the application's partition: what lists and
 * revokes keys without knowing them (authentication reads the item by hash above, never this one).
 */
export const applicationApiKeyKey = (appId: ApplicationId, keyId: ApiKeyId): Key => ({
  pk: applicationPartition(appId),
  sk: `apikey#${keyId}`,
});
/** Query: the API keys of an application (sk prefix; IDs sort by creation time). */
export const apiKeysOfApplication = (appId: ApplicationId) => ({
  pk: applicationPartition(appId),
  skPrefix: 'apikey#',
});

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
  sk: fitted('sk', 'email#', email.toLowerCase()),
});

/** Uniqueness and lookup of a grant by the application's own external ID. */
export const grantExternalIdKey = (appId: ApplicationId, externalId: string): Key => ({
  pk: `app#${appId}`,
  sk: fitted('sk', 'external#', externalId),
});

/** Deployment-wide ownership of an Agent Account address (inbound mail routing, cross-app uniqueness). */
export const agentAddressKey = (email: string): Key => ({
  pk: fitted('pk', 'agent#', email.toLowerCase()),
  sk: 'agent',
});

/** The partitions a grant's data lives in (postings aside: see postingPartition), purged with it. */
const GRANT_PARTITIONS = [
  'folder',
  'msg',
  'mid',
  'thread',
  'threads',
  'draft',
  'template',
  'signature',
  'idem',
  'quota',
  'schedule',
  'evaluations',
  'calendar',
  'icaluid',
  'search',
  'loc',
  'direct',
  'ref',
  'contact',
  'inboxcontact',
  'contactgroup',
  'livemeta',
  'track',
] as const;
const grantPartition = (grantId: GrantId, kind: (typeof GRANT_PARTITIONS)[number]) => `grant#${grantId}#${kind}`;

/** Every partition a grant owns besides message postings (purged with the grant). */
export const grantPartitions = (grantId: GrantId) => GRANT_PARTITIONS.map((kind) => grantPartition(grantId, kind));

/** Folder by ID within a grant (system folders have fixed IDs such as `inbox`). */
export const folderKey = (grantId: GrantId, folderId: string): Key => ({
  pk: grantPartition(grantId, 'folder'),
  sk: folderId,
});
/** Guard item that makes a folder name unique among its siblings (case-insensitive). */
export const folderNameKey = (grantId: GrantId, parentId: string | undefined, name: string): Key => ({
  pk: grantPartition(grantId, 'folder'),
  sk: fitted('sk', `name#${parentId ?? ''}#`, name.trim().toLowerCase()),
});
/** Query: all folders of a grant (and their name guards). */
export const foldersOfGrant = (grantId: GrantId) => ({ pk: grantPartition(grantId, 'folder') });

/** Message by ID within a grant. */
export const messageKey = (grantId: GrantId, messageId: MessageId): Key => ({
  pk: grantPartition(grantId, 'msg'),
  sk: messageId,
});
/** Query: messages of a grant, newest first; sort-key ranges select by receipt time. */
export const messagesOfGrant = (grantId: GrantId) => ({ pk: grantPartition(grantId, 'msg') });

/** Query partition of one filter value (`in:inbox`, `from:ann@x.com`, `unread`, ...). */
export const postingPartition = (grantId: GrantId, kind: string) => fitted('pk', `grant#${grantId}#ix#`, kind);
/** One posting: message `messageId` matches filter value `kind`. */
export const postingKey = (grantId: GrantId, kind: string, messageId: string): Key => ({
  pk: postingPartition(grantId, kind),
  sk: messageId,
});

/**
 * Search entries of a mailbox (shared/db/search.ts), by a ULID taken right before the entry's
 * transaction: queries read the entries above the manifest's watermark.
 */
export const searchEntriesOf = (grantId: GrantId) => grantPartition(grantId, 'search');
export const searchEntryKey = (grantId: GrantId, sequence: string): Key => ({
  pk: searchEntriesOf(grantId),
  sk: sequence,
});
/** The search manifest of a mailbox: its live segments and merge state (one item, read by every search). */
export const searchManifestKey = (grantId: GrantId): Key => ({ pk: `grant#${grantId}`, sk: 'search' });

/** Message by its RFC 5322 Message-ID header: threading of replies and deduplication of inbound mail. */
export const messageIdHeaderKey = (grantId: GrantId, header: string): Key => ({
  pk: grantPartition(grantId, 'mid'),
  sk: fitted('sk', '', header),
});

/** A synced message's reference to another (its In-Reply-To, its thread's root) → its thread: how a parent synced after its reply finds the reply's thread. */
export const referenceKey = (grantId: GrantId, referenced: string): Key => ({
  pk: grantPartition(grantId, 'ref'),
  sk: fitted('sk', '', referenced),
});

/** Thread by ID. */
export const threadKey = (grantId: GrantId, threadId: ThreadId): Key => ({
  pk: grantPartition(grantId, 'thread'),
  sk: threadId,
});
/** Listing entry of a thread, keyed by its latest message so threads sort by activity. */
export const threadListKey = (grantId: GrantId, latestMessageId: string): Key => ({
  pk: grantPartition(grantId, 'threads'),
  sk: latestMessageId,
});
/** Query: threads newest activity first. */
export const threadsOfGrant = (grantId: GrantId) => ({ pk: grantPartition(grantId, 'threads') });

/** Draft by ID (IDs are ULIDs, so the partition reads newest first). */
export const draftKey = (grantId: GrantId, draftId: DraftId): Key => ({
  pk: grantPartition(grantId, 'draft'),
  sk: draftId,
});
export const draftsOfGrant = (grantId: GrantId) => ({ pk: grantPartition(grantId, 'draft') });

export const templateKey = (grantId: GrantId, templateId: TemplateId): Key => ({
  pk: grantPartition(grantId, 'template'),
  sk: templateId,
});
export const templatesOfGrant = (grantId: GrantId) => ({ pk: grantPartition(grantId, 'template') });

/** An application's templates live in a partition of their own: a listing reads only them, newest first. */
export const applicationTemplateKey = (appId: ApplicationId, templateId: ApplicationTemplateId): Key => ({
  pk: `app#${appId}#template`,
  sk: templateId,
});
export const templatesOfApplication = (appId: ApplicationId) => ({ pk: `app#${appId}#template` });

/** An email domain of an application, by ID (shared/domains/store.ts). */
export const applicationDomainKey = (appId: ApplicationId, domainId: DomainId): Key => ({
  pk: `app#${appId}#domain`,
  sk: domainId,
});
/** Query: the domains of an application (IDs sort by creation time). */
export const domainsOfApplication = (appId: ApplicationId) => ({ pk: `app#${appId}#domain` });
/** An application's domain by its name: one registration per name in an application, and the lookup of a send's domain. */
export const applicationDomainNameKey = (appId: ApplicationId, domainName: string): Key => ({
  pk: `app#${appId}#domainname`,
  sk: fitted('sk', '', domainName.toLowerCase()),
});
/** A domain name proven by an application (its ownership record verified): at most one application holds it. */
export const verifiedDomainKey = (domainName: string): Key => ({
  pk: fitted('pk', 'domain#', domainName.toLowerCase()),
  sk: 'verified',
});

export const signatureKey = (grantId: GrantId, signatureId: SignatureId): Key => ({
  pk: grantPartition(grantId, 'signature'),
  sk: signatureId,
});
export const signaturesOfGrant = (grantId: GrantId) => ({ pk: grantPartition(grantId, 'signature') });

/** A scheduled send (IDs are ULIDs: the partition reads newest first). */
export const scheduleKey = (grantId: GrantId, scheduleId: ScheduleId): Key => ({
  pk: grantPartition(grantId, 'schedule'),
  sk: scheduleId,
});
export const schedulesOfGrant = (grantId: GrantId) => ({ pk: grantPartition(grantId, 'schedule') });

/** A send's Idempotency-Key (expires after an hour through TTL). */
export const idempotencyKey = (grantId: GrantId, key: string): Key => ({
  pk: grantPartition(grantId, 'idem'),
  sk: key,
});
/** A transactional send's Idempotency-Key: the application's, there is no grant (expires as above). */
export const transactionalIdempotencyKey = (appId: ApplicationId, key: string): Key => ({
  pk: `app#${appId}#idem`,
  sk: key,
});

/** Messages sent by an Agent Account on one UTC day. */
export const sendQuotaKey = (grantId: GrantId, day: string): Key => ({ pk: grantPartition(grantId, 'quota'), sk: day });
/** Messages an Agent Account received on one UTC day (a workspace policy may limit them). */
export const receiveQuotaKey = (grantId: GrantId, day: string): Key => ({
  pk: grantPartition(grantId, 'quota'),
  sk: `recv#${day}`,
});

/** Webhook destination by ID, scoped to its application. */
export const webhookKey = (appId: ApplicationId, webhookId: WebhookId): Key => ({
  pk: `app#${appId}`,
  sk: `webhook#${webhookId}`,
});
/** Query: the destinations of an application. */
export const webhooksOfApplication = (appId: ApplicationId) => ({ pk: `app#${appId}`, skPrefix: 'webhook#' });
/** Registry entry of a destination: the health sweep reads every destination from one partition. */
export const webhookRegistryKey = (webhookId: WebhookId): Key => ({ pk: 'webhooks', sk: webhookId });
export const webhookRegistry = () => ({ pk: 'webhooks' });

/** One delivery attempt of a destination (IDs are ULIDs: the partition reads newest first). */
export const attemptKey = (webhookId: WebhookId, attemptId: string): Key => ({
  pk: `webhook#${webhookId}#attempts`,
  sk: attemptId,
});
export const attemptsOfWebhook = (webhookId: WebhookId) => ({ pk: `webhook#${webhookId}#attempts` });

/**
 * One writer's attempt counters of a destination for one hour: `attempts`/`failures` for the hour and
 * `a<MM>`/`f<MM>` for each minute MM of it. A writer (a delivery worker's container, or one batch in
 * flight in it) is the only one to write its item, whole and cumulative, so a batch's counts go in the
 * same BatchWriteItem as its attempt records; readers sum the writers' items of each hour. (Items
 * written before writers, `h#<hour>` alone, are summed the same way.)
 */
export const statsKey = (webhookId: WebhookId, seconds: number, writer: string): Key => ({
  pk: statsOfWebhook(webhookId).pk,
  sk: `${statsBucket(seconds)}#${writer}`,
});
/** The sort key of the hour holding Unix time `seconds`. */
export const statsBucket = (seconds: number) => `h#${String(Math.floor(seconds / 3600)).padStart(10, '0')}`;
/** Sort key range of a destination's counters from the hour holding `fromSeconds` on. */
export const statsFrom = (fromSeconds: number) => ({ from: statsBucket(fromSeconds), to: 'h#9999999999' });
/** Unix time at which the hour of a counters item (by its sort key) starts. */
export const statsHourStart = (sk: string) => Number(sk.slice(2, 12)) * 3600;
/** The attribute names counting minute `seconds` inside its hour's counters item. */
export const statsMinute = (seconds: number) => {
  const minute = String(Math.floor((seconds % 3600) / 60)).padStart(2, '0');
  return { attempts: `a${minute}`, failures: `f${minute}` };
};
export const statsOfWebhook = (webhookId: WebhookId) => ({ pk: `webhook#${webhookId}#stats` });

/**
 * A notification committed with its change, for the outbox stream consumer to publish. Written once
 * and never read by key: each has a partition of its own, and the stream carries it.
 */
export const outboxKey = (id: NotificationId | JobId): Key => ({ pk: `outbox#${id}`, sk: 'outbox' });
export const OUTBOX_PK_PREFIX = 'outbox#';
/** One deliverability event of the mail transport, once announced (`identity`: a hash of what the event is; TTL). */
export const deliverabilityEventKey = (identity: string): Key => ({ pk: `deliverability#${identity}`, sk: 'event' });
export const uploadsOfGrant = (grantId: GrantId): string => `grant#${grantId}#uploads`;
export const uploadKey = (grantId: GrantId, id: UploadId): Key => ({ pk: uploadsOfGrant(grantId), sk: id });

/** Lists, rules, policies and workspaces of an application (the governance of its Agent Accounts). */
export const listKey = (appId: ApplicationId, id: ListId): Key => ({ pk: `app#${appId}`, sk: `list#${id}` });
export const listsOfApplication = (appId: ApplicationId) => ({ pk: `app#${appId}`, skPrefix: 'list#' });
export const ruleKey = (appId: ApplicationId, id: RuleId): Key => ({ pk: `app#${appId}`, sk: `rule#${id}` });
export const rulesOfApplication = (appId: ApplicationId) => ({ pk: `app#${appId}`, skPrefix: 'rule#' });
export const policyKey = (appId: ApplicationId, id: PolicyId): Key => ({ pk: `app#${appId}`, sk: `policy#${id}` });
export const policiesOfApplication = (appId: ApplicationId) => ({ pk: `app#${appId}`, skPrefix: 'policy#' });
export const workspaceKey = (appId: ApplicationId, id: WorkspaceId): Key => ({
  pk: `app#${appId}`,
  sk: `workspace#${id}`,
});
export const workspacesOfApplication = (appId: ApplicationId) => ({ pk: `app#${appId}`, skPrefix: 'workspace#' });
/** The guard that makes an application's default workspace one (its workspace ID as an attribute). */
export const defaultWorkspaceGuardKey = (appId: ApplicationId): Key => ({
  pk: applicationPartition(appId),
  sk: 'workspace-default',
});
/**
 * The application's governance version: every change to its lists, rules, policies or workspaces
 * adds one in the same transaction, so a decision that reads it knows whether its cached copy of
 * them is current (no time-based cache).
 */
export const governanceKey = (appId: ApplicationId): Key => ({ pk: `app#${appId}`, sk: 'governance' });

/** One value of a list: its sort key is the normalized value, so membership is a key lookup. */
export const itemsOfList = (listId: ListId) => `list#${listId}#items`;
export const listItemKey = (listId: ListId, value: string): Key => ({ pk: itemsOfList(listId), sk: value });

export const evaluationKey = (grantId: GrantId, id: EvaluationId): Key => ({
  pk: grantPartition(grantId, 'evaluations'),
  sk: id,
});
export const evaluationsOfGrant = (grantId: GrantId) => ({ pk: grantPartition(grantId, 'evaluations') });

/** Calendar by ID within a grant. */
/** A contact of a grant's address book (`address_book`) or collected from its mail (`inbox`). */
export const contactKey = (grantId: GrantId, source: 'address_book' | 'inbox', contactId: ContactId): Key => ({
  pk: contactsOfGrant(grantId, source),
  sk: contactId,
});
export const contactsOfGrant = (grantId: GrantId, source: 'address_book' | 'inbox') =>
  grantPartition(grantId, source === 'inbox' ? 'inboxcontact' : 'contact');
export const contactGroupKey = (grantId: GrantId, groupId: ContactGroupId): Key => ({
  pk: contactGroupsOfGrant(grantId),
  sk: groupId,
});
export const contactGroupsOfGrant = (grantId: GrantId) => grantPartition(grantId, 'contactgroup');
/** Guard item that makes a contact group name unique among its siblings (case-insensitive). */
export const contactGroupNameKey = (grantId: GrantId, parentId: ContactGroupId | undefined, name: string): Key => ({
  pk: contactGroupsOfGrant(grantId),
  sk: fitted('sk', `name#${parentId ?? ''}#`, name.trim().toLowerCase()),
});

export const calendarKey = (grantId: GrantId, calendarId: CalendarId): Key => ({
  pk: grantPartition(grantId, 'calendar'),
  sk: calendarId,
});
export const calendarsOfGrant = (grantId: GrantId) => ({ pk: grantPartition(grantId, 'calendar') });

/** The events of a calendar (masters, single events and overrides), by ID. Purged with the calendar. */
export const eventsOfCalendar = (grantId: GrantId, calendarId: CalendarId) => `grant#${grantId}#cal#${calendarId}#evt`;
export const eventKey = (grantId: GrantId, calendarId: CalendarId, eventId: string): Key => ({
  pk: eventsOfCalendar(grantId, calendarId),
  sk: eventId,
});

/** One time bucket of a calendar's window index (bucket names: shared/db/events.ts). */
export const windowPartition = (grantId: GrantId, calendarId: CalendarId, bucket: string) =>
  `grant#${grantId}#cal#${calendarId}#win#${bucket}`;
/** Sort key of a window copy: the start, zero-padded so keys sort by time, then the event ID. */
export const windowSortKey = (start: number, eventId: string) =>
  `${String(Math.max(0, start)).padStart(11, '0')}#${eventId}`;
export const windowKey = (
  grantId: GrantId,
  calendarId: CalendarId,
  bucket: string,
  start: number,
  eventId: string,
): Key => ({
  pk: windowPartition(grantId, calendarId, bucket),
  sk: windowSortKey(start, eventId),
});

/** Which event of a grant carries an iCalendar UID (one per grant: a series and its overrides share it). */
export const icalUidKey = (grantId: GrantId, uid: string): Key => ({
  pk: grantPartition(grantId, 'icaluid'),
  sk: fitted('sk', '', uid),
});

/** Scheduler configuration by ID, deployment-wide (a public booking page names only the ID). */
export const configurationKey = (id: ConfigurationId): Key => ({ pk: `schedcfg#${id}`, sk: 'config' });
/** The copy of a configuration in its application's partition (lists). */
export const appConfigurationKey = (appId: ApplicationId, id: ConfigurationId): Key => ({
  pk: `app#${appId}`,
  sk: `schedcfg#${id}`,
});
export const configurationsOfApplication = (appId: ApplicationId) => ({ pk: `app#${appId}`, skPrefix: 'schedcfg#' });
/**
 * Uniqueness and lookup of a configuration by slug across every application: a booking page URL
 * names the slug alone, so no other application may take it (and redirect the page).
 */
export const configurationSlugKey = (slug: string): Key => ({ pk: `slug#${slug}`, sk: 'slug' });
/** A hosted OAuth flow in progress, by the SHA-256 of the `state` we sent the provider. */
export const oauthFlowKey = (stateHash: string): Key => ({ pk: `oauthflow#${stateHash}`, sk: 'flow' });
/** An authorization code handed to an application's redirect URI, by its SHA-256. */
export const authorizationCodeKey = (codeHash: string): Key => ({ pk: `oauthcode#${codeHash}`, sk: 'code' });
/** An access or refresh token Switchboard issued, by its SHA-256 (the token itself is never stored). */
export const apiTokenKey = (tokenHash: string): Key => ({ pk: `token#${tokenHash}`, sk: 'token' });
/** The copy of an issued token under its grant, so that revoking or deleting the grant finds them all. */
export const grantTokenKey = (grantId: GrantId, tokenHash: string): Key => ({
  pk: `grant#${grantId}#tokens`,
  sk: tokenHash,
});
export const tokensOfGrant = (grantId: GrantId) => ({ pk: `grant#${grantId}#tokens` });
/** A connected grant's tokens at its provider (sealed), with the refresh lease and version. */
export const providerTokensKey = (grantId: GrantId): Key => ({ pk: `grant#${grantId}`, sk: 'provider_tokens' });
/** A synced grant's sync state: its lease, next run and per-folder checkpoints (shared/db/mail-sync.ts). */
export const mailSyncKey = (grantId: GrantId): Key => ({ pk: `grant#${grantId}`, sk: 'mail_sync' });
/** Provider B's lifecycle notifications of a grant's subscriptions, until its next run acts on them (shared/db/graph-lifecycle.ts). */
export const graphLifecycleKey = (grantId: GrantId): Key => ({ pk: `grant#${grantId}`, sk: 'graph_lifecycle' });
/** Where a synced message is on its server: one item per folder, UIDVALIDITY and UID (sorted by UID). */
export const serverLocationKey = (grantId: GrantId, folderId: string, uidValidity: string, uid: number): Key => ({
  pk: grantPartition(grantId, 'loc'),
  sk: `${folderId}#${uidValidity}#${String(uid).padStart(10, '0')}`,
});
/** Query: the locations of one folder under one UIDVALIDITY (`sk` begins with the prefix), or of every UIDVALIDITY of the folder. */
export const serverLocationsOf = (grantId: GrantId, folderId: string, uidValidity?: string) => ({
  pk: grantPartition(grantId, 'loc'),
  skPrefix: uidValidity === undefined ? `${folderId}#` : `${folderId}#${uidValidity}#`,
});
/** A message a `query_imap` list answered that is not synced, by its ID (TTL a day): how a get with query_imap finds it on the server. */
export const directIdKey = (grantId: GrantId, messageId: string): Key => ({
  pk: grantPartition(grantId, 'direct'),
  sk: messageId,
});
/** When an organization's administrator consented for an application's credential (admin consent flow). */
export const adminConsentKey = (appId: ApplicationId, provider: string, credentialId: string): Key => ({
  pk: `app#${appId}`,
  sk: `adminconsent#${provider}#${credentialId}`,
});

/** A scheduler session by the SHA-256 of its token (the token itself is never stored). */
export const sessionKey = (tokenHash: string): Key => ({ pk: `schedses#${tokenHash}`, sk: 'session' });
export const bookingKey = (id: BookingId): Key => ({ pk: `booking#${id}`, sk: 'booking' });
/** A group event of a group configuration, by its event ID on the organizer's calendar (in the configuration's partition). */
export const groupEventKey = (configId: ConfigurationId, eventId: string): Key => ({
  pk: `schedcfg#${configId}`,
  sk: fitted('sk', 'groupevent#', eventId),
});
export const groupEventsOfConfiguration = (configId: ConfigurationId) => ({
  pk: `schedcfg#${configId}`,
  skPrefix: 'groupevent#',
});
/** An organizer's booked time on one UTC day: the slot locks bookings take and cancellations release. */
export const bookedDayKey = (grantId: GrantId, day: string): Key => ({ pk: `grant#${grantId}#booked`, sk: day });

/**
 * The context a sealed value is bound to (shared/crypto/sealed.ts): the key of the item that holds it,
 * so a sealed value copied onto another item does not open there.
 */
export const sealContext = (key: Key): string => `${key.pk}/${key.sk}`;

/** A redirect (callback) URI of an application, by ID. */
export const redirectUriKey = (appId: ApplicationId, id: RedirectUriId): Key => ({
  pk: `app#${appId}`,
  sk: `redirect_uri#${id}`,
});
export const redirectUrisOfApplication = (appId: ApplicationId) => ({ pk: `app#${appId}`, skPrefix: 'redirect_uri#' });
/**
 * Uniqueness and lookup of a redirect URI by its URL, the string as registered (never normalized: the
 * OAuth flow compares strings), hashed: URLs may outgrow a sort key. Records registered before exact
 * matching are keyed by their parsed URL (`new URL(url).href`, RedirectUriRecord.href).
 */
export const redirectUrlKey = (appId: ApplicationId, url: string): Key => ({
  pk: `app#${appId}`,
  sk: `redirect_url#${sha256(url)}`,
});
/** A desktop redirect URI on loopback http, by its URL with the port cut out: RFC 8252 lets any port match it. */
export const redirectLoopbackKey = (appId: ApplicationId, urlWithoutPort: string): Key => ({
  pk: `app#${appId}`,
  sk: `redirect_loopback#${sha256(urlWithoutPort)}`,
});

/** The connector of one provider (an application has at most one per provider). */
export const connectorKey = (appId: ApplicationId, provider: string): Key => ({
  pk: `app#${appId}`,
  sk: `connector#${provider}`,
});
export const connectorsOfApplication = (appId: ApplicationId) => ({ pk: `app#${appId}`, skPrefix: 'connector#' });
/** A credential of a provider's connector, by ID. */
export const credentialKey = (appId: ApplicationId, provider: string, id: CredentialId): Key => ({
  pk: `app#${appId}`,
  sk: `cred#${provider}#${id}`,
});
/** Query: the credentials stored for a provider (of its current connector and of deleted ones not yet cleaned up). */
export const credentialsOfProvider = (appId: ApplicationId, provider: string) => ({
  pk: `app#${appId}`,
  skPrefix: `cred#${provider}#`,
});
/** Guard item that makes a credential name unique within one connector (its generation), case-insensitively. */
export const credentialNameKey = (
  appId: ApplicationId,
  provider: string,
  generation: string,
  normalizedName: string,
): Key => ({
  pk: `app#${appId}`,
  sk: `credname#${provider}#${generation}#${sha256(normalizedName)}`,
});
export const credentialNamesOfConnector = (appId: ApplicationId, provider: string, generation: string) => ({
  pk: `app#${appId}`,
  skPrefix: `credname#${provider}#${generation}#`,
});

/** Our metadata of a message whose provider keeps the message itself (provider A: shared/db/live-metadata.ts). */
export const liveMetadataKey = (grantId: GrantId, messageId: string): Key => ({
  pk: grantPartition(grantId, 'livemeta'),
  sk: fitted('sk', 'msg#', messageId),
});
const pairPrefix = (key: string, value: string) => `pair#${key}#${sha256(value).slice(0, 32)}#`;
/** One message under one of its indexed metadata pairs (key1..key5). */
export const liveMetadataPairKey = (grantId: GrantId, key: string, value: string, messageId: string): Key => ({
  pk: grantPartition(grantId, 'livemeta'),
  sk: fitted('sk', pairPrefix(key, value), messageId),
});
/** Query: the messages under one metadata pair (sk begins with `prefix`). */
export const liveMetadataPairPrefix = (grantId: GrantId, key: string, value: string) => ({
  pk: grantPartition(grantId, 'livemeta'),
  prefix: pairPrefix(key, value),
});

/**
 * Whose tracked messages: a grant's (its `track` partition, purged with the grant), or, for its
 * transactional sends (no grant), the application's.
 */
export type TrackingOwner = GrantId | ApplicationId;
const trackPartition = (owner: TrackingOwner) =>
  owner.startsWith(`${ID_PREFIXES.application}_`) ? `app#${owner}#track` : grantPartition(owner as GrantId, 'track');

/** What a tracked sent message tracks and what it counted (opens, replies): one item per message. */
export const trackedMessageKey = (owner: TrackingOwner, messageId: MessageId): Key => ({
  pk: trackPartition(owner),
  sk: messageId,
});
/** The clicks of one link of a tracked message, by the link's position in its body. */
export const trackedLinkKey = (owner: TrackingOwner, messageId: MessageId, index: number): Key => ({
  pk: trackPartition(owner),
  sk: `${messageId}#link#${String(index).padStart(4, '0')}`,
});
/** Query: the clicked links of a tracked message, in body order. */
export const trackedLinksOf = (owner: TrackingOwner, messageId: MessageId) => ({
  pk: trackPartition(owner),
  prefix: `${messageId}#link#`,
});
