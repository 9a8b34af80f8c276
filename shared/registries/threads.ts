import * as agent from '#shared/mailbox/threads';
import { imapThreadWrites } from '#shared/imap/threads';
import { gmailThreads } from '#shared/google/threads';
import { graphThreads } from '#shared/microsoft/threads';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { ThreadsProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const imapThreads: ThreadsProvider = { list: agent.listThreads, get: agent.getThread, ...imapThreadWrites };

const registry: Partial<Record<Provider, ThreadsProvider>> = {
  agent: { list: agent.listThreads, get: agent.getThread, update: agent.updateThread, delete: agent.deleteThread },
  imap: imapThreads,
  icloud: imapThreads,
  // Provider A's threads are Gmail's (shared/google/), B's are Outlook's conversations (shared/microsoft/); Yahoo's accounts are read over IMAP with their access tokens.
  google: gmailThreads,
  microsoft: graphThreads,
  yahoo: imapThreads,
};

export const threadsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Threads');

export type { ThreadsProvider };
