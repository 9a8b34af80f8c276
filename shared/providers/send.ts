import * as agent from '#shared/agent/send';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { providerOf } from '#shared/providers/mailbox';

export interface SendProvider {
  send: typeof agent.sendMessage;
}

const registry: Partial<Record<Provider, SendProvider>> = { agent: { send: agent.sendMessage } };

export const senderOf = (grant: GrantRecord) => providerOf(registry, grant, 'Sending');
