import type { FetchMessageObject, SearchObject } from 'imapflow';
import { getMessage as storedMessage } from '#shared/mailbox/messages';
import { messageView } from '#shared/mailbox/views';
import { snippetOf, bodyText } from '#shared/mailbox/text';
import { encodeOffsetCursor, decodeOffsetCursor } from '#shared/cursor';
import * as folders from '#shared/db/folders';
import type { GrantRecord } from '#shared/db/grants';
import type { MessageRecord } from '#shared/db/mail-records';
import { forgetDirectId, getDirectId, rememberDirectIds } from '#shared/db/mail-sync';
import * as messages from '#shared/db/messages';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { parseId, type MessageId, type ThreadId } from '#shared/ids';
import { withImap } from '#shared/imap/session';
import { imapMessageId, keptFlags, messageIdHeaderOf } from '#shared/imap/sync';
import { threadingHeaders } from '#shared/mail/threading';
import { parseMime } from '#shared/mail/parse';
import type { ListMessagesQuery, MessageIdQuery } from '#schemas/mail';
import { clock } from '#shared/time';

/**
 * `query_imap=true`: the IMAP server is asked instead of the synced store (the spec's rule 3). A list
 * needs `in` (one folder), is a UID SEARCH there with the filters IMAP can express, newest first, and
 * each message of the page is fetched and parsed; it reaches mail older than the three synced months.
 * Its messages carry the same IDs as synced ones (from the Message-ID header), `folders` only `in`,
 * and those not synced are remembered for a day by ID, so that a get with `query_imap` finds them
 * again (`SEARCH HEADER Message-ID`); a server that cannot search headers answers 404 then.
 */

/** Filters IMAP SEARCH has no word for: refused with query_imap rather than ignored. */
const NOT_ON_SERVER: (keyof ListMessagesQuery)[] = [
  'thread_id',
  'has_attachment',
  'search_query_native',
  'metadata_pair',
];

const addresses = (value: string) =>
  value
    .split(',')
    .map((a) => a.trim())
    .filter(Boolean);

/** The query's filters as one IMAP SEARCH (its keys are ANDed; one OR group at most). */
function searchOf(query: ListMessagesQuery): SearchObject {
  const search: SearchObject = {};
  const groups: SearchObject[][] = [];
  if (query.subject) search.subject = query.subject;
  for (const field of ['from', 'to', 'cc', 'bcc'] as const) {
    const wanted = query[field];
    if (!wanted) continue;
    const list = addresses(wanted);
    if (list.length === 1) search[field] = list[0];
    else groups.push(list.map((a) => ({ [field]: a })));
  }
  if (query.any_email)
    groups.push(addresses(query.any_email).flatMap((a) => [{ from: a }, { to: a }, { cc: a }, { bcc: a }]));
  if (groups.length > 1)
    throw new InvalidRequestError("With 'query_imap=true', only one filter may list several addresses");
  if (groups.length) search.or = groups[0];
  if (query.unread !== undefined) search.seen = !query.unread;
  if (query.starred !== undefined) search.flagged = query.starred;
  if (query.received_before !== undefined) search.before = new Date(query.received_before * 1000);
  if (query.received_after !== undefined) search.since = new Date(query.received_after * 1000);
  return Object.keys(search).length ? search : { all: true };
}

/** A message as a list or get with query_imap reads it from the server. */
type ServerMessage = Pick<FetchMessageObject, 'uid' | 'flags' | 'internalDate'> & { source: Buffer };

/**
 * What a list or get with query_imap answers for messages read from the server: parsed, then their
 * synced records (a synced message answers its thread, attachments and metadata) and the threads of
 * those they reply to, each read once for all of them.
 */
async function viewsFromServer(grant: GrantRecord, folderId: string, fetched: readonly ServerMessage[]) {
  const parsed = await Promise.all(
    fetched.map(async (message) => {
      const mail = await parseMime(message.source);
      const header = messageIdHeaderOf(mail.messageId, message.source);
      const date =
        mail.date ??
        (message.internalDate ? Math.floor(new Date(message.internalDate).getTime() / 1000) : clock.nowSeconds());
      return { message, mail, header, date, id: imapMessageId(header, date) };
    }),
  );
  const [records, threads] = await Promise.all([
    messages.getMessages(
      grant.id,
      parsed.map((p) => p.id),
    ),
    messages.getMessageIdHeaders(
      grant.id,
      parsed.flatMap((p) => threadingHeaders(p.mail)),
    ),
  ]);
  const storedById = new Map(records.map((r) => [r.id as string, r]));
  return parsed.map(({ message, mail, header, date, id }) => {
    const stored = storedById.get(id);
    const flags = keptFlags(message.flags);
    const body = mail.html ?? mail.text ?? '';
    const repliedTo = threadingHeaders(mail)
      .map((h) => threads.get(h)?.thread_id)
      .find((t) => t !== undefined);
    const record: MessageRecord = {
      id,
      grant_id: grant.id,
      thread_id: stored?.thread_id ?? repliedTo ?? (`thr_${id.slice(4)}` as ThreadId),
      subject: mail.subject,
      from: mail.from,
      to: mail.to,
      cc: mail.cc,
      bcc: mail.bcc,
      reply_to: mail.replyTo,
      date,
      unread: !flags.includes('\\Seen'),
      starred: flags.includes('\\Flagged'),
      folders: [folderId],
      snippet: snippetOf(bodyText(body, mail.html === undefined)),
      is_plaintext: mail.html === undefined,
      attachments: stored?.attachments ?? [],
      metadata: stored?.metadata ?? {},
      ...(mail.inReplyTo ? { in_reply_to: mail.inReplyTo } : {}),
      references: mail.references,
      created_at: stored?.created_at ?? date,
      updated_at: stored?.updated_at ?? date,
      version: stored?.version ?? 0,
    };
    return { view: messageView(record, { body }), header, stored: stored !== undefined };
  });
}

async function requireServerFolder(grant: GrantRecord, folderId: string) {
  const folder = await folders.getFolder(grant.id, folderId);
  if (!folder?.server_path) throw new NotFoundError(`Folder '${folderId}' not found`);
  return folder;
}

export async function listOnServer(grant: GrantRecord, query: ListMessagesQuery, limit: number) {
  if (!query.in)
    throw new InvalidRequestError(
      "'in' (a folder ID) is required with 'query_imap=true': the server is searched one folder at a time",
    );
  const refused = NOT_ON_SERVER.find((name) => query[name] !== undefined);
  if (refused)
    throw new InvalidRequestError(
      `'${refused}' cannot be combined with 'query_imap=true': IMAP SEARCH has no such filter`,
    );
  const folder = await requireServerFolder(grant, query.in);
  const offset = query.page_token ? decodeOffsetCursor(query.page_token, `imap:${folder.id}`) : 0;
  const { fetched, total } = await withImap(grant, async (client) => {
    await client.mailboxOpen(folder.server_path!, { readOnly: true });
    const uids = ((await client.search(searchOf(query), { uid: true })) || []).sort((a, b) => b - a);
    const page = uids.slice(offset, offset + limit);
    const found = page.length
      ? await client.fetchAll(
          page.join(','),
          { uid: true, flags: true, internalDate: true, source: true },
          { uid: true },
        )
      : [];
    const byUid = new Map(found.map((m) => [m.uid, m]));
    // Newest first, as searched (a FETCH answers in its own order).
    const fetched = page
      .map((uid) => byUid.get(uid))
      .filter((m): m is FetchMessageObject & { source: Buffer } => m?.source !== undefined);
    return { fetched, total: uids.length };
  });
  const views = await viewsFromServer(grant, folder.id, fetched);
  await rememberDirectIds(
    grant.id,
    views.filter((v) => !v.stored).map((v) => ({ id: v.view.id, message_id_header: v.header, folder_id: folder.id })),
    clock.nowSeconds() + 86_400,
  );
  return {
    items: views.map((v) => v.view),
    nextCursor: offset + limit < total ? encodeOffsetCursor(`imap:${folder.id}`, offset + limit) : undefined,
  };
}

export async function getOnServer(grant: GrantRecord, messageId: string, query: MessageIdQuery) {
  const id = parseId('message', messageId);
  if (!id) throw new NotFoundError(`Message '${messageId}' not found`);
  const stored = await messages.getMessage(grant.id, id);
  if (stored) return storedMessage(grant, messageId, query);
  const known = await getDirectId(grant.id, id);
  const notFound = new NotFoundError(
    `Message '${messageId}' not found on the server (with query_imap, a message outside the synced mail is found by an ID a query_imap list answered within a day)`,
  );
  if (!known) throw notFound;
  const folder = await requireServerFolder(grant, known.folder_id);
  const source = await withImap(grant, async (client) => {
    await client.mailboxOpen(folder.server_path!, { readOnly: true });
    let uids: number[];
    try {
      uids = (await client.search({ header: { 'message-id': known.message_id_header } }, { uid: true })) || [];
    } catch {
      // The server cannot search headers: the spec's 404.
      return undefined;
    }
    if (!uids.length) return undefined;
    const message = await client.fetchOne(
      String(uids[0]),
      { uid: true, flags: true, internalDate: true, source: true },
      { uid: true },
    );
    return message && message.source ? { ...message, source: message.source } : undefined;
  });
  const found = source ? (await viewsFromServer(grant, folder.id, [source]))[0] : undefined;
  if (!found) {
    await forgetDirectId(grant.id, id as MessageId);
    throw notFound;
  }
  return found.view;
}
