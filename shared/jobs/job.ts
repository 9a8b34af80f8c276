/**
 * Background work that must not hold up a request goes through the jobs queue (SQS with a DLQ) to
 * the `jobs` worker. Jobs are a discriminated union handled by an exhaustive switch there, and must
 * be idempotent: SQS delivers at least once, and a job committed through the outbox may be sent
 * more than once.
 */
export type Job =
  /** Deletes everything a deleted grant stored: mailbox items, indexes, contents in S3. */
  | { kind: 'purge-grant'; application_id: string; grant_id: string; provider: string }
  /** Deletes the delivery log and counters of a deleted webhook destination. */
  | { kind: 'purge-webhook'; webhook_id: string }
  /** Recomputes a thread's aggregate from its messages (idempotent: committed with every change to them). */
  | { kind: 'refresh-thread'; application_id: string; grant_id: string; thread_id: string }
  /**
   * Committed with every stored message (instead of a refresh-thread and an index job): refreshes its
   * thread, then merges the mailbox's search entries into its segments (shared/agent/search-index.ts).
   */
  | { kind: 'message-stored'; application_id: string; grant_id: string; thread_id: string; message_id: string }
  /** Merges a mailbox's search entries into its segments (idempotent; also run by message-stored). */
  | { kind: 'merge-search'; application_id: string; grant_id: string }
  /** Jobs committed before the search index (they completed a message's postings): nothing to do now. */
  | { kind: 'index-message'; application_id: string; grant_id: string; message_id: string }
  /**
   * Removes what nothing points to any more since a committed change: postings of a deleted message
   * (`owner_id`) and contents in S3 that a deleted or replaced message or draft referenced.
   */
  | { kind: 'remove-contents'; application_id: string; grant_id: string; owner_id: string; postings: string[]; blobs: string[] }
  /** Deletes the items of a deleted list (the list itself is already gone; rules no longer match it). */
  | { kind: 'purge-list'; application_id: string; list_id: string }
  /**
   * Mails an iCalendar REQUEST, CANCEL or REPLY from an Agent Account (iMIP): the calendar text is
   * built when the change is committed, so the mail says what the change said.
   */
  | { kind: 'send-itip'; application_id: string; grant_id: string; method: 'REQUEST' | 'CANCEL' | 'REPLY'; to: { email: string; name?: string }[]; subject: string; body: string; ics: string }
  /**
   * Mails a message from an Agent Account through the send path (quota, Sent copy, local delivery),
   * with an optional iCalendar part: the scheduler's confirmations, requests, changes and cancellations.
   */
  | {
      kind: 'send-mail';
      application_id: string;
      grant_id: string;
      to: { email: string; name?: string }[];
      subject: string;
      body: string;
      calendar?: { method: 'REQUEST' | 'CANCEL'; ics: string };
      purpose: string;
    }
  /**
   * Sets (or clears) a booking's reminder schedules in EventBridge Scheduler, one one-shot schedule
   * per reminder of its configuration: committed with every booking change, so none is lost.
   */
  | { kind: 'booking-reminders'; booking_id: string }
  /**
   * Does the provider step of a booking change committed with it (create, move, confirm or cancel the
   * event: the booking's `event_step`), then commits the booking's update with its notification and
   * mails (shared/scheduling/booking-events.ts). Idempotent: it acts only while the booking is still
   * at `version` with its event pending. `links`: the guest's and organizer's page links of a new
   * booking (their salts are never stored); `cancel_ics`: the CANCEL read before the event goes.
   */
  | { kind: 'booking-event'; booking_id: string; version: number; links?: { manage?: string; confirm?: string }; cancel_ics?: string }
  /** Applies an iCalendar part received by an Agent Account (invitation, update, cancellation, reply) to its calendar. */
  | { kind: 'apply-itip'; application_id: string; grant_id: string; sender: string; ics: string }
  /** Deletes the events (and their window copies and UIDs) of a deleted calendar. */
  | { kind: 'purge-calendar'; application_id: string; grant_id: string; calendar_id: string }
  /**
   * Stores a sent message's copies in the Agent Accounts of this deployment among its recipients
   * (shared/agent/local-delivery.ts), one job per batch of mailboxes (`batch` of `batches`): the
   * message waits under `spool` in S3; deduplicated per mailbox by `message_id_header`.
   * `application_id` is the sender's.
   */
  | { kind: 'deliver-local'; application_id: string; spool: string; message_id_header: string; recipients: { application_id: string; grant_id: string }[]; batch?: number; batches?: number };
