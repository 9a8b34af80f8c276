import * as agent from '#shared/mailbox/messages';
import { imapMessages } from '#shared/imap/messages';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { MessagesProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, MessagesProvider>> = {
  agent: { list: agent.listMessages, get: agent.getMessage, update: agent.updateMessage, delete: agent.deleteMessage },
  imap: imapMessages,
  icloud: imapMessages,
  // The OAuth providers' accounts are read over IMAP with their access tokens (shared/imap/session.ts).
  google: imapMessages,
  microsoft: imapMessages,
  yahoo: imapMessages,
};

export const messagesOf = (grant: GrantRecord) => providerOf(registry, grant, 'Messages');

export type { MessagesProvider };
