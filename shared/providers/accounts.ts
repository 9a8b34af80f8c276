import { agentAccounts } from '#shared/agent/account';
import type { Provider } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';
import type { AccountHooks } from '#shared/providers/contract';

/** The account hooks (shared/providers/contract.ts) of each provider. */
const registry: Record<Provider, AccountHooks> = { agent: agentAccounts };

/**
 * Provider names in the API and the providers they mean. Agent Accounts answer as `nylas` (the
 * published contract's value for hosted mailboxes) and `agent` is accepted as an alias.
 */
const NAMES: Record<string, Provider> = { nylas: 'agent', agent: 'agent' };
const PUBLIC_NAME: Record<Provider, string> = { agent: 'nylas' };

/** The provider an API value names (undefined for a value no provider answers to). */
export const providerNamed = (name: string): Provider | undefined => NAMES[name];
/** The value the API answers for a provider. */
export const publicProviderName = (provider: Provider): string => PUBLIC_NAME[provider];

export function accountHooksOf(provider: string): AccountHooks {
  const hooks = (registry as Record<string, AccountHooks | undefined>)[provider];
  if (!hooks) throw new InvalidRequestError(`Unsupported provider '${provider}'`);
  return hooks;
}
