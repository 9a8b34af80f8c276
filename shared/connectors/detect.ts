import type { ApplicationContext } from '#shared/caller';
import * as repo from '#shared/db/connectors';
import { InvalidRequestError } from '#shared/errors';
import { detectDomain } from '#shared/providers/mail-domains';

/**
 * POST /v3/providers/detect: the provider of an email address, from a built-in table of well-known
 * mail domains. Deliberately no network: no MX or autodiscovery lookup happens here, so an address
 * at a company domain hosted by Google or Microsoft is not detected (a deployed MX lookup is out of
 * scope for now). Without `all_provider_types`, only providers the application has a connector for
 * count as detected. The table: shared/providers/mail-domains.ts.
 */
type DetectInput = { email?: string; all_provider_types?: boolean };

/** Detects from the query (as the published contract sends it) or from a JSON body, not both. */
export async function detectProvider(app: ApplicationContext, query: DetectInput, body: DetectInput | undefined) {
  const inQuery = Object.keys(query).length > 0;
  if (inQuery && body && Object.keys(body).length > 0)
    throw new InvalidRequestError(
      'Send email and all_provider_types either in the query or in the JSON body, not both',
    );
  const input = inQuery ? query : (body ?? {});
  const email = input.email;
  if (email === undefined)
    throw new InvalidRequestError("'email' is required (as a query parameter or in the JSON body)");
  const at = email.lastIndexOf('@');
  const found = detectDomain(email.slice(at + 1).toLowerCase());
  const usable =
    found && (input.all_provider_types || (await repo.getConnector(app.applicationId, found.provider)) !== undefined);
  return usable
    ? { email_address: email, detected: true, provider: found.provider, ...(found.type ? { type: found.type } : {}) }
    : { email_address: email, detected: false };
}
