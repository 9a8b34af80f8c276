import type { DraftId, GrantId, MessageId, ThreadId } from '#shared/ids';
import { idTime } from '#shared/ids';
import type { MessageRecord, ParticipantRecord, ThreadRecord } from '#shared/db/mail-records';

/**
 * The headers that place a message in its conversation: all that `fields=include_basic_headers` keeps
 * (the contract: `Message-ID`, `In-Reply-To` and `References`, for every provider).
 */
export const THREADING_HEADERS: ReadonlySet<string> = new Set(['message-id', 'in-reply-to', 'references']);

/**
 * Threads for every mail provider: which thread a new message joins (by its In-Reply-To and
 * References headers), and a thread's aggregate computed from its messages (participants, folders,
 * unread and star state, dates). Rather than patching an aggregate on every change, providers
 * recompute it from the thread's messages with `aggregateThread`, which keeps it right whatever
 * changed (Agent Accounts: shared/mailbox/thread-refresh.ts).
 */

/**
 * The Message-IDs that place a message in a thread, in the order they are looked up: the message it
 * answers first, then its references from the newest.
 */
export const threadingHeaders = (message: {
  inReplyTo?: string | undefined;
  references: readonly string[];
}): string[] => [message.inReplyTo ?? '', ...[...message.references].reverse()];

const normalAddress = (email: string) => email.trim().toLowerCase();
/** When a message arrived: the time in its ULID (stored messages are named when they arrive). */
export const receivedAt = (m: Pick<MessageRecord, 'id'>) => Math.floor(idTime(m.id) / 1000);

/** What of each message the thread aggregate reads: a refresh fetches only these (not bodies or headers). */
export const AGGREGATED_FIELDS = [
  'id',
  'subject',
  'from',
  'to',
  'cc',
  'bcc',
  'folders',
  'snippet',
  'unread',
  'starred',
  'attachments',
  'date',
] as const;
export type AggregatedMessage = Pick<MessageRecord, (typeof AGGREGATED_FIELDS)[number]>;

/** The thread record of `messages` (newest first); `sentFolder`: the ID of the mailbox's Sent folder (its messages were sent, the others received). Also used by bulk loads. */
export function aggregateThread(
  grantId: GrantId,
  threadId: ThreadId,
  messages: AggregatedMessage[],
  draftIds: string[],
  version: number,
  sentFolder: string,
): ThreadRecord {
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
  const sent = messages.filter((m) => m.folders.includes(sentFolder));
  const received = messages.filter((m) => !m.folders.includes(sentFolder));
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

/** Whether two aggregates of a thread say the same (versions aside). */
export function sameAggregate(a: ThreadRecord, b: ThreadRecord): boolean {
  const { version: _a, ...left } = a;
  const { version: _b, ...right } = b;
  return canonical(left) === canonical(right);
}

const canonical = (value: unknown): string =>
  JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([x], [y]) => (x < y ? -1 : 1)))
      : v,
  );
