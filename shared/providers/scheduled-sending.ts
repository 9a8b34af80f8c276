import { agentScheduledSending } from '#shared/agent/scheduled-sending';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { providerOf } from '#shared/providers/mailbox';
import type { ScheduledSending } from '#shared/scheduled-send/contract';

/** Scheduled send's provider side (shared/scheduled-send/contract.ts) of each provider. */
const registry: Partial<Record<Provider, ScheduledSending>> = {
  agent: agentScheduledSending,
};

export const scheduledSendingOf = (grant: GrantRecord) => providerOf(registry, grant, 'Scheduled send');
