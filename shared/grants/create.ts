import type { ApplicationContext } from '#shared/caller';
import * as grants from '#shared/db/grants';
import { UniquenessConflictError, type GrantRecord } from '#shared/db/grants';
import { ConflictError, InvalidRequestError } from '#shared/errors';
import { workspaceForNewGrant } from '#shared/governance/workspaces';
import { obscureUserAgent, toGrantResource } from '#shared/accounts/grant-resource';
import { conflictMessage } from '#shared/grants/service';
import { checkAgentAccountDomain } from '#shared/domains/agent-accounts';
import { newId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import { accountHooksOf } from '#shared/registries/accounts';
import { customAuthenticationOf } from '#shared/registries/custom';
import { providerNamed } from '#shared/providers/names';
import { clock } from '#shared/time';
import type { CreateCustomGrantBody } from '#schemas/grants';

/**
 * `POST /v3/connect/custom`: an Agent Account from the request alone, or, for a provider whose
 * accounts live elsewhere, that provider's custom (bulk) authentication. Kept apart from the rest of
 * the grants service so that only the connect function bundles what bulk authentication needs.
 */
export async function createCustomGrant(
  app: ApplicationContext,
  body: CreateCustomGrantBody,
  meta: { ip: string; userAgent: string },
): Promise<GrantRecord> {
  const provider = providerNamed(body.provider);
  if (!provider) throw new InvalidRequestError(`Unsupported provider '${body.provider}'`);
  const hooks = accountHooksOf(provider);
  const foreign = Object.keys(body.settings).filter((field) => !hooks.settingsFields.includes(field));
  if (foreign.length) {
    throw new InvalidRequestError(
      `${foreign.map((f) => `'settings.${f}'`).join(', ')} ${foreign.length > 1 ? 'do' : 'does'} not apply to provider '${body.provider}' (its settings: ${hooks.settingsFields.join(', ')})`,
    );
  }
  const custom = customAuthenticationOf(provider);
  if (custom) return custom(app, body, meta);
  if (!hooks.account)
    throw new InvalidRequestError(
      `Grants of provider '${body.provider}' are created by hosted OAuth (GET /v3/connect/auth)`,
    );
  const account = hooks.account(body);
  const email = account.email;
  // An account made from the request alone is hosted here (an Agent Account): once the application
  // has domains, it lives on one of them, verified.
  await checkAgentAccountDomain(app.applicationId, email);
  if (body.workspace_id !== undefined && !hooks.governed)
    throw new InvalidRequestError(`'workspace_id' applies to Agent Accounts only`);
  const workspaceId = hooks.governed
    ? await workspaceForNewGrant(app.applicationId, email, body.workspace_id)
    : undefined;
  const now = clock.nowSeconds();
  const record: GrantRecord = {
    id: newId('grant'),
    application_id: app.applicationId,
    provider,
    grant_status: 'valid',
    email,
    ...(account.name !== undefined ? { name: account.name } : {}),
    scope: ['email', 'calendar'],
    settings: account.settings,
    ip: meta.ip || undefined,
    user_agent: obscureUserAgent(meta.userAgent),
    created_at: now,
    updated_at: now,
    provider_user_id: email,
    blocked: false,
    external_id: body.external_id,
    ...(workspaceId ? { workspace_id: workspaceId } : {}),
  };
  try {
    // What the provider commits with a new grant (an Agent Account: its address and system folders).
    await grants.insertGrant(record, hooks.created(record, now), [
      {
        notification: newNotification({
          type: 'grant.created',
          applicationId: app.applicationId,
          grantId: record.id,
          object: toGrantResource(record),
        }),
      },
    ]);
  } catch (error) {
    if (error instanceof UniquenessConflictError)
      throw new ConflictError(conflictMessage(error, email, body.external_id));
    throw error;
  }
  return record;
}
