import type { OutboxEntry } from '#shared/db/outbox';
import type { GrantRecord } from '#shared/db/grants';
import { googlePushSettings } from '#shared/google/push';
import { ApiError } from '#shared/errors';
import { googleClientOf, GoogleNotFoundError, type GoogleClient } from '#shared/google/client';
import { gmailMessages, gmailMessagesById } from '#shared/google/messages';
import { metadataOnly } from '#shared/google/scopes';
import { derivedId, type ApplicationId, type GrantId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import type { Message, SyncOutcome, SyncRun, SyncSource } from '#shared/providers/contract';
import { clock } from '#shared/time';
import { countMetric, METRICS } from '#shared/metrics';

/**
 * Provider A's mail changes, announced: Gmail's history (users.history.list) since the grant's
 * cursor, read by the bounded runs of shared/services/mail-sync.ts (one at a time per grant, under
 * its lease). Nothing of the mailbox is stored: the cursor is the state. A run's first sight of a
 * mailbox takes its current history ID and announces nothing (what was there before is not news).
 * Then each page of history becomes notifications, committed with the cursor that follows them in
 * one conditional write (`run.save`): the cursor only moves forward, and a page announced is never
 * announced again (the same history read twice, by a push that arrives twice, finds the cursor past it).
 *   - a message added: `message.created` (with the message as Gmail has it now);
 *   - its labels changed: `message.updated`;
 *   - deleted: `message.deleted`; added and deleted within one page: nothing.
 * Drafts (the DRAFT label) are not messages: they announce nothing here.
 * An expired cursor (history.list's 404: Gmail keeps about a week) takes the mailbox's current history
 * ID and announces, as `message.created`, the messages received since the last change it announced
 * (at most EXPIRED_WINDOW_MAX of them, newest first): changes to older messages in the gap are the
 * part no API can give back.
 */

/** History records per page: a page's notifications and the cursor fit one DynamoDB transaction (100 items). */
const PAGE = 90;
const EXPIRED_WINDOW_MAX = 500;
const HISTORY_TYPES = ['messageAdded', 'messageDeleted', 'labelAdded', 'labelRemoved'];

interface HistoryMessage {
  id: string;
  threadId?: string;
  labelIds?: string[];
}
interface HistoryRecord {
  id: string;
  messagesAdded?: { message: HistoryMessage }[];
  messagesDeleted?: { message: HistoryMessage }[];
  labelsAdded?: { message: HistoryMessage; labelIds?: string[] }[];
  labelsRemoved?: { message: HistoryMessage; labelIds?: string[] }[];
}
interface HistoryPage {
  history?: HistoryRecord[];
  nextPageToken?: string;
  historyId: string;
}

type Change = 'created' | 'updated' | 'deleted';

/** What each message's changes in these records amount to, in the order first seen. */
export function changesOf(records: readonly HistoryRecord[]): Map<string, { change: Change; at: string }> {
  const found = new Map<string, { change: Change; at: string }>();
  const isDraft = (m: HistoryMessage) => (m.labelIds ?? []).includes('DRAFT');
  for (const record of records) {
    for (const { message } of record.messagesAdded ?? [])
      if (!isDraft(message)) found.set(message.id, { change: 'created', at: record.id });
    for (const { message } of [...(record.labelsAdded ?? []), ...(record.labelsRemoved ?? [])]) {
      if (isDraft(message)) continue;
      const before = found.get(message.id);
      // A message added in these records is announced once, as it is at the end.
      if (before?.change !== 'created') found.set(message.id, { change: 'updated', at: record.id });
    }
    for (const { message } of record.messagesDeleted ?? []) {
      if (isDraft(message)) continue;
      const before = found.get(message.id);
      // Added and gone again before anyone was told: nothing to tell.
      if (before?.change === 'created') found.delete(message.id);
      else found.set(message.id, { change: 'deleted', at: record.id });
    }
  }
  return found;
}

/** One notification per message and history record: the same history read again makes the same IDs. */
const notificationId = (grant: GrantRecord, messageId: string, change: Change, at: string) =>
  derivedId('notification', clock.nowMs(), `${grant.id}\n${messageId}\n${change}\n${at}`);

async function notificationsFor(
  grant: GrantRecord,
  changes: Map<string, { change: Change; at: string }>,
): Promise<OutboxEntry[]> {
  // The created and updated messages, read at once (batches of gets); one gone since is left out:
  // its deletion is further on in the history, and is announced there.
  const read = await gmailMessagesById(
    grant,
    [...changes].flatMap(([id, { change }]) => (change === 'deleted' ? [] : [id])),
  );
  const entries: OutboxEntry[] = [];
  for (const [messageId, { change, at }] of changes) {
    const object: Message | { id: string; object: 'message'; grant_id: string } | undefined =
      change === 'deleted' ? { id: messageId, object: 'message', grant_id: grant.id } : read.get(messageId);
    if (!object) continue;
    entries.push({
      notification: newNotification({
        // A grant with Gmail's metadata scope only: limited data, told by the type's suffix.
        type: metadataOnly(grant) && change !== 'deleted' ? `message.${change}.metadata` : `message.${change}`,
        applicationId: grant.application_id as ApplicationId,
        grantId: grant.id as GrantId,
        object,
        id: notificationId(grant, messageId, change, at),
      }),
    });
  }
  return entries;
}

/** After an expired cursor: the messages received since the last announced change, as message.created. */
async function recoverWindow(grant: GrantRecord, since: number): Promise<OutboxEntry[]> {
  const page = await gmailMessages.list(grant, { received_after: since }, EXPIRED_WINDOW_MAX);
  return page.items.map((message) => ({
    notification: newNotification({
      type: 'message.created',
      applicationId: grant.application_id as ApplicationId,
      grantId: grant.id as GrantId,
      object: message,
      id: notificationId(grant, message.id, 'created', `window-${since}`),
    }),
  }));
}

/** A watch is asked for again a day after the last time (Google: at least every 7 days, daily recommended). */
const WATCH_RENEW_SECONDS = 86_400;
/** After a refused watch, the next try (a topic or its permissions fixed meanwhile). */
const WATCH_RETRY_SECONDS = 3_600;

/**
 * Keeps Gmail's watch on the mailbox while the application's google connector names a Pub/Sub topic:
 * asked for when missing, when the topic changed, and a day after it was last asked for; stopped when
 * the connector no longer names one. Its pushes (POST /v3/push/google/pubsub?application_id=…) only bring the
 * grant's next run forward: the history read from the cursor stays the one source of what changed, so a
 * push that arrives twice, late or never changes nothing that is announced. A refused watch is kept in
 * the state with its reason (the runs go on, on their schedule) and tried again an hour later.
 */
async function keepWatch(grant: GrantRecord, client: GoogleClient, run: SyncRun): Promise<void> {
  const gmail = run.state.gmail!;
  const push = await googlePushSettings(grant.application_id as ApplicationId);
  const now = clock.nowSeconds();
  const watch = gmail.watch;
  if (!push) {
    if (!watch) return;
    await client.call({ api: 'gmail', method: 'POST', path: '/gmail/v1/users/me/stop' }).catch(() => undefined);
    await commit(run, { ...run.state, gmail: { history_id: gmail.history_id } });
    return;
  }
  if (
    watch?.topic === push.topicName &&
    now - watch.renewed_at < (watch.error ? WATCH_RETRY_SECONDS : WATCH_RENEW_SECONDS)
  )
    return;
  let next: NonNullable<typeof watch>;
  try {
    const answer = await client.call<{ expiration?: string }>({
      api: 'gmail',
      method: 'POST',
      path: '/gmail/v1/users/me/watch',
      body: { topicName: push.topicName, labelFilterBehavior: 'exclude', labelIds: ['SPAM'] },
    });
    next = { topic: push.topicName, expires_at: Math.floor(Number(answer.expiration ?? 0) / 1000), renewed_at: now };
  } catch (error) {
    if (!(error instanceof ApiError) || error.status >= 500 || error.status === 429) throw error;
    next = {
      topic: push.topicName,
      expires_at: watch?.expires_at ?? 0,
      renewed_at: now,
      error: error.message.slice(0, 300),
    };
  }
  await commit(run, { ...run.state, gmail: { ...gmail, watch: next } });
}

const currentHistoryId = async (client: GoogleClient) =>
  (await client.call<{ historyId: string }>({ api: 'gmail', path: '/gmail/v1/users/me/profile' })).historyId;

/**
 * Commits the next state with its notifications, then makes it the run's state (the service ends
 * the run with `run.state`: it must hold only what was committed).
 */
async function commit(run: SyncRun, next: SyncRun['state'], outbox: OutboxEntry[] = []): Promise<SyncRun['state']> {
  await run.save(next, outbox);
  return Object.assign(run.state, next);
}

export const gmailMailChanges: SyncSource = {
  async run(grant: GrantRecord, run: SyncRun): Promise<SyncOutcome> {
    const client = await googleClientOf(grant);
    let state = run.state;
    if (!state.gmail) {
      await commit(run, { ...state, gmail: { history_id: await currentHistoryId(client) }, seeded: true });
      await keepWatch(grant, client, run);
      return { status: 'done', changed: false };
    }
    let changed = false;
    let pageToken: string | undefined;
    const start = state.gmail.history_id;
    do {
      if (run.outOfTime()) return { status: 'more', changed };
      let page: HistoryPage;
      try {
        page = await client.call<HistoryPage>({
          api: 'gmail',
          path: '/gmail/v1/users/me/history',
          query: {
            startHistoryId: start,
            maxResults: PAGE,
            historyTypes: HISTORY_TYPES,
            ...(pageToken ? { pageToken } : {}),
          },
        });
      } catch (error) {
        if (!(error instanceof GoogleNotFoundError)) throw error;
        countMetric(METRICS.cursorResets, { provider: 'google' });
        const now = clock.nowSeconds();
        const outbox = await recoverWindow(grant, state.last_change_at);
        state = await commit(
          run,
          { ...state, gmail: { ...state.gmail, history_id: await currentHistoryId(client) }, last_change_at: now },
          outbox,
        );
        await keepWatch(grant, client, run);
        return { status: 'done', changed: outbox.length > 0 };
      }
      const records = page.history ?? [];
      const outbox = await notificationsFor(grant, changesOf(records));
      // Mid-listing, the cursor is the last record read; at the end, the mailbox's own history ID.
      const next = page.nextPageToken ? (records.at(-1)?.id ?? state.gmail!.history_id) : page.historyId;
      state = await commit(
        run,
        {
          ...state,
          gmail: { ...state.gmail, history_id: next },
          ...(outbox.length ? { last_change_at: clock.nowSeconds() } : {}),
        },
        outbox,
      );
      changed ||= outbox.length > 0;
      pageToken = page.nextPageToken;
    } while (pageToken);
    await keepWatch(grant, client, run);
    return { status: 'done', changed };
  },
};
