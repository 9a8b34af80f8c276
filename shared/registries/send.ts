import * as scheduled from '#shared/mailbox/scheduled';
import { imapSend } from '#shared/imap/send';
import { gmailSend } from '#shared/google/send';
import type { GrantRecord, Provider } from '#shared/db/grants';
import type { SendProvider } from '#shared/providers/contract';
import { providerOf } from '#shared/registries/provider-of';

const registry: Partial<Record<Provider, SendProvider>> = {
  agent: { send: scheduled.sendOrSchedule },
  imap: imapSend,
  icloud: imapSend,
  // Provider A answers from its own APIs (shared/google/); B's and Yahoo's accounts are read over IMAP with their access tokens (shared/imap/session.ts).
  google: gmailSend,
  microsoft: imapSend,
  yahoo: imapSend,
};

export const senderOf = (grant: GrantRecord) => providerOf(registry, grant, 'Sending');

export type { SendProvider };
