import type { GrantRecord, Provider } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';
import { publicProviderName } from '#shared/providers/names';

/**
 * Every grant-scoped mail endpoint goes through a provider of its capability (messages, threads,
 * folders, drafts, send, attachments). Agent Accounts (shared/agent/, over shared/mailbox/) are the first implementation;
 * IMAP/SMTP, provider A, provider B and CalDAV adapters register beside them. Capabilities have
 * registries of their own so a function bundles only the code of the endpoints it serves.
 */
export function providerOf<T>(registry: Partial<Record<Provider, T>>, grant: GrantRecord, capability: string): T {
  const provider = registry[grant.provider];
  if (!provider) {
    const name = publicProviderName(grant.provider);
    throw new InvalidRequestError(
      `${capability} of '${name}' grants are not served by this deployment yet: it has no ${name} adapter for them (the grant itself, its tokens, GET /v3/grants/me and webhooks work; grant ${grant.id})`,
    );
  }
  return provider;
}
