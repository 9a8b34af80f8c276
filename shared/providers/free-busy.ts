import { busyTimes } from '#shared/agent/event-windows';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { FreeBusyProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/providers/mailbox';

const registry: Partial<Record<Provider, FreeBusyProvider>> = {
  agent: { busy: busyTimes },
};

export const freeBusyOf = (grant: GrantRecord) => providerOf(registry, grant, 'Free/busy');
