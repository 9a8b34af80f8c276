import * as agent from '#shared/agent/messages';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { providerOf } from '#shared/providers/mailbox';

export interface MessagesProvider {
  list: typeof agent.listMessages;
  get: typeof agent.getMessage;
  update: typeof agent.updateMessage;
  delete: typeof agent.deleteMessage;
  clean: typeof agent.cleanMessages;
}

const registry: Partial<Record<Provider, MessagesProvider>> = {
  agent: { list: agent.listMessages, get: agent.getMessage, update: agent.updateMessage, delete: agent.deleteMessage, clean: agent.cleanMessages },
};

export const messagesOf = (grant: GrantRecord) => providerOf(registry, grant, 'Messages');
