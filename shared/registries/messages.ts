import * as agent from '#shared/mailbox/messages';
import { imapMessages } from '#shared/imap/messages';
import { gmailMessages } from '#shared/google/messages';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { MessagesProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, MessagesProvider>> = {
  agent: { list: agent.listMessages, get: agent.getMessage, update: agent.updateMessage, delete: agent.deleteMessage },
  imap: imapMessages,
  icloud: imapMessages,
  // Provider A answers from its own APIs (shared/google/); B's and Yahoo's accounts are read over IMAP with their access tokens (shared/imap/session.ts).
  google: gmailMessages,
  microsoft: imapMessages,
  yahoo: imapMessages,
};

export const messagesOf = (grant: GrantRecord) => providerOf(registry, grant, 'Messages');

export type { MessagesProvider };
