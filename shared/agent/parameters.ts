/**
 * Query parameters the published contract lists for other providers' mailboxes, and why an Agent
 * Account has no use for them (each answered with this 400 by every operation that lists it).
 * `query_imap=false` asks for nothing and is accepted.
 */
export const AGENT_UNSUPPORTED_PARAMETERS: Readonly<Record<string, string>> = {
  query_imap: "'query_imap' is only available for IMAP grants; Agent Accounts are searched directly",
  shared_from: "'shared_from' is not supported for Agent Accounts: they have no shared mailboxes",
  shared_folder_id: "'shared_folder_id' is not supported for Agent Accounts: they have no shared folders",
};
