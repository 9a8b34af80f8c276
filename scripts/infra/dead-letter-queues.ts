/**
 * The template's dead-letter queues by the short name operators use (`npm run admin -- redrive <name>`,
 * the alarms' descriptions, the runbook). test/unit/alarms.test.ts fails while a dead-letter queue of
 * the template has no name here, so a new one is named, alarmed and redrivable together.
 */
export const DEAD_LETTER_QUEUES = {
  fanout: 'FanoutDeadLetterQueue',
  delivery: 'DeliveryDeadLetterQueue',
  jobs: 'JobsDeadLetterQueue',
  'mail-sync': 'MailSyncDeadLetterQueue',
  'scheduled-send': 'ScheduledSendDeadLetterQueue',
  inbound: 'InboundDeadLetterQueue',
  'ses-events': 'SesEventsDeadLetterQueue',
  'outbox-failure': 'OutboxFailureDeadLetterQueue',
} as const;

export type DeadLetterQueueName = keyof typeof DEAD_LETTER_QUEUES;

/**
 * The dead-letter queues that hold Lambda's on-failure records instead of the messages that failed:
 * there is no source queue to move them back to, and moving them anywhere replays nothing.
 */
export const NOT_REDRIVABLE: Partial<Record<DeadLetterQueueName, string>> = {
  inbound:
    "the inbound dead-letter queue holds Lambda's on-failure records of the inbound function (SES invocations that " +
    'still failed after Lambda retried them), not messages of a queue: there is no queue to move them back to. ' +
    "Each record's requestPayload is the SES event; its mail waits in the mail bucket under inbound/<SES message id> " +
    'for 14 days. Replay one by invoking the function with that payload (see the runbook, "Inbound mail failed").',
  'outbox-failure':
    "the outbox-failure queue holds Lambda's on-failure records of the outbox's table stream: each describes a batch " +
    'of stream records (shard, first and last sequence number, arrival times) that failed for a day, not the records ' +
    'themselves, which the stream no longer keeps. Moving them replays nothing. Read them, find what those changes ' +
    'were from the function\'s logs and the table, then delete them (see the runbook, "Outbox records given up").',
};
