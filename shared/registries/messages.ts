import * as agent from '#shared/mailbox/messages';
import { imapMessages } from '#shared/imap/messages';
import { gmailMessages } from '#shared/google/messages';
import { graphMessages } from '#shared/microsoft/messages';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { MessagesProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';
import { withTrackingOptions } from '#shared/tracking/options';

const registry: Partial<Record<Provider, MessagesProvider>> = {
  agent: { list: agent.listMessages, get: agent.getMessage, update: agent.updateMessage, delete: agent.deleteMessage },
  imap: imapMessages,
  icloud: imapMessages,
  // Providers A and B answer from their own APIs (shared/google/, shared/microsoft/); Yahoo's accounts are read over IMAP with their access tokens (shared/imap/session.ts).
  google: gmailMessages,
  microsoft: graphMessages,
  yahoo: imapMessages,
};

/**
 * `fields=include_tracking_options`, for every provider: its standard message, with the settings it
 * was sent with (shared/tracking/options.ts: kept here for messages sent with tracking options,
 * whoever holds the message itself).
 */
function withTrackingOptionsOf(provider: MessagesProvider): MessagesProvider {
  return {
    ...provider,
    async list(grant, query, limit) {
      if (query.fields !== 'include_tracking_options') return provider.list(grant, query, limit);
      const { fields: _tracking, ...standard } = query;
      const page = await provider.list(grant, standard, limit);
      return { ...page, items: await withTrackingOptions(grant.id, page.items) };
    },
    async get(grant, messageId, query) {
      if (query.fields !== 'include_tracking_options') return provider.get(grant, messageId, query);
      const { fields: _tracking, ...standard } = query;
      return (await withTrackingOptions(grant.id, [await provider.get(grant, messageId, standard)]))[0]!;
    },
  };
}

export const messagesOf = (grant: GrantRecord) => withTrackingOptionsOf(providerOf(registry, grant, 'Messages'));

export type { MessagesProvider };
