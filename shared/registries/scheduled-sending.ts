import { agentScheduledSending } from '#shared/mailbox/scheduled-sending';
import { imapScheduledSending } from '#shared/imap/send';
import { gmailScheduledSending } from '#shared/google/send';
import { graphScheduledSending } from '#shared/microsoft/send';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { providerOf } from '#shared/registries/provider-of';
import type { ScheduledSending } from '#shared/providers/contract';

/** Scheduled send's provider side (ScheduledSending in shared/providers/contract.ts) of each provider. */
const registry: Partial<Record<Provider, ScheduledSending>> = {
  agent: agentScheduledSending,
  imap: imapScheduledSending,
  icloud: imapScheduledSending,
  google: gmailScheduledSending,
  microsoft: graphScheduledSending,
  yahoo: imapScheduledSending,
};

export const scheduledSendingOf = (grant: GrantRecord) => providerOf(registry, grant, 'Scheduled send');
