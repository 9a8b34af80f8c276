import { calendarJobs } from '#shared/calendar/imip';
import { BODY_INLINE_MAX, storeCopies } from '#shared/mailbox/store';
import { mailboxesHolding } from '#shared/db/messages';
import type { HostedMailboxes } from '#shared/providers/contract';

/**
 * Agent Accounts as the mailboxes this deployment hosts (shared/services/local-delivery.ts): a delivered
 * copy lands unread in the inbox, with an invitation job per calendar part.
 */
export const agentHostedMailboxes: HostedMailboxes = {
  bodyInlineMax: BODY_INLINE_MAX,
  async storeCopies(copy, grants, sources) {
    const { calendarParts, ...fields } = copy;
    await storeCopies(
      { ...fields, bcc: [], unread: true, starred: false, folders: ['inbox'], metadata: {} },
      grants.map((grant) => ({ grant, jobs: calendarJobs(grant, calendarParts, copy.from[0]?.email) })),
      sources,
    );
  },
  holding: (grantIds, messageIdHeader) => mailboxesHolding([...grantIds], messageIdHeader),
};
