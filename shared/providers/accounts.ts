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
  account(settings: CreateCustomGrantBody['settings']): { email: string; settings: Record<string, unknown> };
  /** Items committed in the transaction that creates the grant (reservations, initial storage). */
  created(grant: GrantRecord, now: number): NamedTransactItem[];
  /** Items committed in the transaction that deletes the grant (releasing what `created` reserved). */
  deleted(grant: GrantRecord): NamedTransactItem[];
}

const registry: Record<Provider, AccountHooks> = { agent: agentAccounts };

export function accountHooksOf(provider: string): AccountHooks {
  const hooks = (registry as Record<string, AccountHooks | undefined>)[provider];
  if (!hooks) throw new InvalidRequestError(`Unsupported provider '${provider}'`);
  return hooks;
}
