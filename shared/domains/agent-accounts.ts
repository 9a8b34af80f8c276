import * as store from '#shared/domains/store';
import { InvalidRequestError } from '#shared/errors';
import type { ApplicationId } from '#shared/ids';

/**
 * Where an application's new Agent Account may live, once the application has domains:
 * - on a domain it registered: only once its ownership is verified (400 until then);
 * - on a domain it did not register: refused (400), since its domains say which are its own.
 * An application that registered no domain keeps the behaviour from before domains existed: any
 * address not taken by another Agent Account.
 */
export async function checkAgentAccountDomain(appId: ApplicationId, address: string): Promise<void> {
  const domainName = address.slice(address.lastIndexOf('@') + 1).toLowerCase();
  const domain = await store.getDomainByName(appId, domainName);
  if (domain) {
    if (!domain.verified.ownership)
      throw new InvalidRequestError(
        `The domain ${domainName} (${domain.id}) is registered but its ownership is not verified yet: publish its ownership record and verify it (POST /v3/admin/domains/${domain.id}/verify) before creating Agent Accounts on it`,
      );
    return;
  }
  if (await store.hasDomains(appId))
    throw new InvalidRequestError(
      `The domain ${domainName} is not one of this application's domains: Agent Accounts of an application with domains must be on one of its verified domains (register it with POST /v3/admin/domains and verify it)`,
    );
}
