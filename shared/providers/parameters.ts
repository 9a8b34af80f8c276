import { AGENT_UNSUPPORTED_PARAMETERS } from '#shared/agent/parameters';
import type { Provider } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';

/**
 * Provider-only query parameters (schemas/common.ts) a grant's provider cannot honour, with the 400
 * that says why. Checked once for every grant-scoped request, after validation, so each operation
 * that lists a parameter answers it the same way.
 */
const UNSUPPORTED: Partial<Record<Provider, Readonly<Record<string, string>>>> = {
  agent: AGENT_UNSUPPORTED_PARAMETERS,
  imap: {
    shared_from: "'shared_from' is not supported for IMAP grants: they have no shared mailboxes",
    shared_folder_id: "'shared_folder_id' is not supported for IMAP grants: they have no shared folders",
  },
};

export function checkProviderParameters(provider: Provider, query: Readonly<Record<string, unknown>>): void {
  for (const [name, message] of Object.entries(UNSUPPORTED[provider] ?? {})) {
    const value = query[name];
    if (value !== undefined && value !== false) throw new InvalidRequestError(message);
  }
}
