import type { ContactRecord } from '#shared/db/contacts';
import { getInboxContacts, writeInboxContact } from '#shared/db/contacts';
import { getFolders } from '#shared/db/folders';
import { getGrant } from '#shared/db/grants';
import { messageKey } from '#shared/db/keys';
import { batchGet } from '#shared/db/batch';
import type { MessageRecord, ParticipantRecord } from '#shared/db/mail-records';
import type { ApplicationId, GrantId, MessageId } from '#shared/ids';
import { inPool } from '#shared/pool';
import { clock } from '#shared/time';
import { inboxContactId } from '#shared/contacts/stored';

/**
 * Contacts collected from a mailbox's mail (`source=inbox`): the people it writes to (To, Cc, Bcc of
 * what it sends) and the people who write to it (From and Reply-To of what it receives, unless it
 * lies in spam or trash). One contact per address; a known one is written again only when its
 * address comes with another display name. Run by the jobs that follow stored mail (never on the
 * request or delivery path), so it costs delivery nothing; the writes are idempotent, a job run
 * twice collects once.
 */
const SKIPPED_FOLDER_IDS = new Set(['spam', 'junk', 'trash']);
const SKIPPED_ATTRIBUTES = new Set(['\\junk', '\\trash']);
/** Addresses machines send from: not people to keep. */
const AUTOMATED = /^(no-?reply|do-?not-?reply|mailer-daemon|postmaster|bounces?)([+.-]|@)/i;

type Seen = Pick<MessageRecord, 'from' | 'to' | 'cc' | 'bcc' | 'reply_to' | 'folders'>;

/** Given and family name from a display name ("Ann Lee" → Ann / Lee; "Lee, Ann" → Ann / Lee). */
export function namesOf(display: string | undefined): Pick<ContactRecord, 'given_name' | 'surname'> {
  const name = display?.replace(/^["']|["']$/g, '').trim();
  if (!name || name.includes('@')) return {};
  const comma = /^([^,]+),\s*(.+)$/.exec(name);
  if (comma) return { given_name: comma[2]!.trim(), surname: comma[1]!.trim() };
  const space = name.lastIndexOf(' ');
  return space > 0 ? { given_name: name.slice(0, space).trim(), surname: name.slice(space + 1) } : { given_name: name };
}

/** The addresses a mailbox corresponds with in these messages, each with the last display name seen. */
export function correspondents(
  own: string,
  messages: readonly Seen[],
  skippedFolders: ReadonlySet<string>,
): Map<string, string | undefined> {
  const found = new Map<string, string | undefined>();
  const self = own.toLowerCase();
  const add = (people: readonly ParticipantRecord[] | undefined) => {
    for (const p of people ?? []) {
      const email = p.email.trim().toLowerCase();
      if (!email.includes('@') || email === self || AUTOMATED.test(email)) continue;
      found.set(email, p.name?.trim() || found.get(email));
    }
  };
  for (const m of messages) {
    const sent = m.from?.some((p) => p.email.toLowerCase() === self);
    if (sent) {
      add(m.to);
      add(m.cc);
      add(m.bcc);
    } else if (!m.folders.some((f) => skippedFolders.has(f))) {
      add(m.from);
      add(m.reply_to);
    }
  }
  return found;
}

/** Collects the correspondents of stored messages into the grant's inbox contacts. */
export async function collectInboxContacts(
  applicationId: ApplicationId,
  grantId: GrantId,
  messageIds: readonly MessageId[],
): Promise<number> {
  if (!messageIds.length) return 0;
  const grant = await getGrant(applicationId, grantId);
  if (!grant?.email) return 0;
  const messages = await batchGet<Seen>(
    messageIds.map((id) => messageKey(grantId, id)),
    { projection: ['from', 'to', 'cc', 'bcc', 'reply_to', 'folders'] },
  );
  const folderIds = [...new Set(messages.flatMap((m) => m.folders ?? []))];
  const skipped = new Set(folderIds.filter((id) => SKIPPED_FOLDER_IDS.has(id)));
  for (const folder of await getFolders(
    grantId,
    folderIds.filter((id) => !skipped.has(id)),
  )) {
    if (folder.attributes.some((a) => SKIPPED_ATTRIBUTES.has(a.toLowerCase()))) skipped.add(folder.id);
  }
  const people = correspondents(
    grant.email,
    messages.map((m) => ({ ...m, folders: m.folders ?? [] })),
    skipped,
  );
  if (!people.size) return 0;
  const ids = new Map([...people.keys()].map((email) => [inboxContactId(grantId, email), email]));
  const known = new Map((await getInboxContacts(grantId, [...ids.keys()])).map((c) => [c.id, c]));
  const now = clock.nowSeconds();
  let written = 0;
  await inPool([...ids], 8, async ([id, email]) => {
    const name = people.get(email);
    const current = known.get(id);
    if (current && (name === undefined || name === current.seen_name)) return;
    const { given_name: _given, surname: _surname, ...kept } = current ?? ({} as Partial<ContactRecord>);
    const record: ContactRecord = {
      ...kept,
      ...namesOf(name),
      id,
      grant_id: grantId,
      source: 'inbox',
      emails: [{ email }],
      group_ids: [],
      email_index: [email],
      phone_index: [],
      ...(name ? { seen_name: name } : {}),
      created_at: current?.created_at ?? now,
      updated_at: now,
      version: (current?.version ?? 0) + 1,
    };
    if (await writeInboxContact(record, current?.version)) written++;
  });
  return written;
}
