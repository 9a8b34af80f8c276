import * as agent from '#shared/agent/send';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { SendProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/providers/mailbox';

const registry: Partial<Record<Provider, SendProvider>> = { agent: { send: agent.sendMessage } };

export const senderOf = (grant: GrantRecord) => providerOf(registry, grant, 'Sending');

export type { SendProvider };
