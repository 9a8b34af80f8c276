import * as agent from '#shared/mailbox/messages';
import { imapMessages } from '#shared/imap/messages';
import { gmailMessages } from '#shared/google/messages';
import { graphMessages } from '#shared/microsoft/messages';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { MessagesProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, MessagesProvider>> = {
  agent: { list: agent.listMessages, get: agent.getMessage, update: agent.updateMessage, delete: agent.deleteMessage },
  imap: imapMessages,
  icloud: imapMessages,
  // Providers A and B answer from their own APIs (shared/google/, shared/microsoft/); Yahoo's accounts are read over IMAP with their access tokens (shared/imap/session.ts).
  google: gmailMessages,
  microsoft: graphMessages,
  yahoo: imapMessages,
};

export const messagesOf = (grant: GrantRecord) => providerOf(registry, grant, 'Messages');

export type { MessagesProvider };
