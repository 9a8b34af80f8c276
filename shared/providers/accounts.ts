import { agentAccounts } from '#shared/agent/account';
import type { NamedTransactItem } from '#shared/db/transact';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { InvalidRequestError } from '#shared/errors';
import type { CreateCustomGrantBody } from '#schemas/grants';

/**
 * The lifecycle side of the provider contract: what a provider does when one of its grants is
 * created or deleted. The grants service calls these hooks and never names a provider itself; the
 * purge of a deleted grant's data is the other half (shared/providers/purge.ts, in the jobs worker).
 */
export interface AccountHooks {
  /**
   * The account a create request names, from its provider settings (400 when they do not fit this
   * provider): its address, and the settings kept on the grant.
   */
  account(request: CreateCustomGrantBody): { email: string; settings: Record<string, unknown>; name?: string };
  /** Checks the provider fields of an update (`settings`, `scope`): 400 saying why for what cannot change. */
  update(request: { settings?: Record<string, unknown>; scope?: string[] }): void;
  /** Items committed in the transaction that creates the grant (reservations, initial storage). */
  created(grant: GrantRecord, now: number): NamedTransactItem[];
  /** Items committed in the transaction that deletes the grant (releasing what `created` reserved). */
  deleted(grant: GrantRecord): NamedTransactItem[];
}

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
