import { kinds, normalAddress } from '#shared/agent/postings';
import type { MessageRecord, ParticipantRecord, ThreadRecord } from '#shared/agent/types';
import { receivedAt } from '#shared/agent/views';
import { postingPartition } from '#shared/db/keys';
import { getMessages, queryIds } from '#shared/db/messages';
import * as threads from '#shared/db/threads';
import { ThreadChangedError } from '#shared/db/threads';
import type { DraftId, GrantId, MessageId, ThreadId } from '#shared/ids';

/**
 * A thread is an aggregate of its messages (participants, folders, unread and star state, dates).
 * Rather than patching it on every change, it is recomputed from its messages, which keeps it right
 * whatever changed; the write is conditional on the version read, and retried when a concurrent
 * refresh won.
 */
const MAX_THREAD_MESSAGES = 1000;

/** What of each message the thread aggregate reads: a refresh fetches only these (not bodies or headers). */
const AGGREGATED_FIELDS = ['id', 'subject', 'from', 'to', 'cc', 'bcc', 'folders', 'snippet', 'unread', 'starred', 'attachments', 'date'] as const;
type AggregatedMessage = Pick<MessageRecord, (typeof AGGREGATED_FIELDS)[number]>;

/** The thread record of `messages` (newest first); also used by bulk loads. */
export function aggregateThread(grantId: GrantId, threadId: ThreadId, messages: AggregatedMessage[], draftIds: string[], version: number): ThreadRecord {
  // `messages` is newest first.
  const latest = messages[0]!;
  const earliest = messages.at(-1)!;
  const participants: ParticipantRecord[] = [];
  const seen = new Set<string>();
  const folders = new Set<string>();
  for (const m of [...messages].reverse()) {
    for (const p of [...m.from, ...m.to, ...m.cc, ...m.bcc]) {
      const key = normalAddress(p.email);
      if (!seen.has(key)) {
        seen.add(key);
        participants.push(p);
      }
    }
    for (const f of m.folders) folders.add(f);
  }
  const sent = messages.filter((m) => m.folders.includes('sent'));
  const received = messages.filter((m) => !m.folders.includes('sent'));
  return {
    id: threadId,
    grant_id: grantId,
    subject: earliest.subject,
    participants,
    message_ids: messages.map((m) => m.id).reverse(),
    draft_ids: draftIds as DraftId[],
    folders: [...folders],
    snippet: latest.snippet,
    unread: messages.some((m) => m.unread),
    starred: messages.some((m) => m.starred),
    has_attachments: messages.some((m) => m.attachments.length > 0),
    earliest_message_date: Math.min(...messages.map((m) => m.date)),
    latest_message_received_date: receivedAt(received[0] ?? latest),
    ...(sent.length ? { latest_message_sent_date: receivedAt(sent[0]!) } : {}),
    latest_message_id: latest.id as MessageId,
    version,
  };
}

export async function refreshThread(grantId: GrantId, threadId: ThreadId): Promise<ThreadRecord | undefined> {
  for (let attempt = 0; attempt < 6; attempt++) {
    const previous = await threads.getThread(grantId, threadId);
    const [messagePage, draftPage] = await Promise.all([
      queryIds(postingPartition(grantId, kinds.thread(threadId)), {}, MAX_THREAD_MESSAGES),
      queryIds(postingPartition(grantId, kinds.draftThread(threadId)), {}, 100),
    ]);
    const messages = await getMessages(grantId, messagePage.ids, AGGREGATED_FIELDS);
    try {
      if (!messages.length) {
        if (previous) await threads.deleteThread(previous);
        return undefined;
      }
      const record = aggregateThread(grantId, threadId, messages, draftPage.ids, (previous?.version ?? 0) + 1);
      await threads.putThread(record, previous);
      return record;
    } catch (error) {
      if (!(error instanceof ThreadChangedError)) throw error;
    }
  }
  throw new Error(`Thread ${threadId} kept changing while it was refreshed`);
}
