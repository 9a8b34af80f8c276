import { AGENT_UNSUPPORTED_PARAMETERS } from '#shared/agent/parameters';
import type { Provider } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';

/**
 * Provider-only query parameters (schemas/common.ts) a grant's provider cannot honour, with the 400
 * that says why. Checked once for every grant-scoped request, after validation, so each operation
 * that lists a parameter answers it the same way.
 */
const IMAP_UNSUPPORTED = {
  shared_from: "'shared_from' is not supported for IMAP grants: they have no shared mailboxes",
  shared_folder_id: "'shared_folder_id' is not supported for IMAP grants: they have no shared folders",
};

const GOOGLE_UNSUPPORTED = {
  query_imap:
    "'query_imap' applies to IMAP grants; a google grant is searched at Gmail itself (search_query_native takes Gmail's syntax)",
  shared_from: "'shared_from' is not supported for google grants: Gmail has no shared mailboxes",
  shared_folder_id: "'shared_folder_id' is not supported for google grants: Gmail has no shared folders",
};

const MICROSOFT_UNSUPPORTED = {
  query_imap:
    "'query_imap' applies to IMAP grants; a microsoft grant is searched at Graph itself (search_query_native takes Graph's $search syntax)",
  shared_from:
    "'shared_from' is not supported for microsoft grants yet: only the grant's own mailbox is read (a shared mailbox can be connected as a grant of its own with admin consent)",
  shared_folder_id:
    "'shared_folder_id' is not supported for microsoft grants yet: only the grant's own folders are read",
};

const UNSUPPORTED: Partial<Record<Provider, Readonly<Record<string, string>>>> = {
  agent: AGENT_UNSUPPORTED_PARAMETERS,
  imap: IMAP_UNSUPPORTED,
  icloud: IMAP_UNSUPPORTED,
  google: GOOGLE_UNSUPPORTED,
  microsoft: MICROSOFT_UNSUPPORTED,
};

export function checkProviderParameters(provider: Provider, query: Readonly<Record<string, unknown>>): void {
  for (const [name, message] of Object.entries(UNSUPPORTED[provider] ?? {})) {
    const value = query[name];
    if (value !== undefined && value !== false) throw new InvalidRequestError(message);
  }
}
