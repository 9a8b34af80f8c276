import * as agent from '#shared/mailbox/messages';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { MessageCleaningProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, MessageCleaningProvider>> = {
  agent: { clean: agent.cleanMessages },
};

/** Same capability name as messagesOf: to a client, cleaning is part of Messages. */
export const messageCleanerOf = (grant: GrantRecord) => providerOf(registry, grant, 'Messages');

export type { MessageCleaningProvider };
