import * as agent from '#shared/agent/threads';
import { imapThreadWrites } from '#shared/imap/threads';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { ThreadsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/providers/mailbox';

const registry: Partial<Record<Provider, ThreadsProvider>> = {
  agent: { list: agent.listThreads, get: agent.getThread, update: agent.updateThread, delete: agent.deleteThread },
  imap: { list: agent.listThreads, get: agent.getThread, ...imapThreadWrites },
};

export const threadsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Threads');

export type { ThreadsProvider };
