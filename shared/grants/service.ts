import type { ApplicationContext } from '#shared/caller';
import { decodeCursor, encodeCursor } from '#shared/cursor';
import * as grants from '#shared/db/grants';
import { StaleWriteError, UniquenessConflictError, type GrantRecord } from '#shared/db/grants';
import { grantsOfApplication } from '#shared/db/keys';
import { getSyncState, graphWatch } from '#shared/db/mail-sync';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { pageSize } from '#shared/answer-limits';
import { newId } from '#shared/ids';
import { newNotification } from '#shared/notifications/notification';
import { obscureUserAgent, toGrantResource } from '#shared/accounts/grant-resource';
import { accountHooksOf } from '#shared/registries/accounts';
import { MAIL_SYNCED_PROVIDERS, providerNamed } from '#shared/providers/names';
import { clock } from '#shared/time';
import type { Grant, ListGrantsQuery, UpdateGrantBody } from '#schemas/grants';

export { obscureUserAgent, toGrantResource };

/**
 * One grant as GET /v3/grants/{grant_id} answers it: with how its sync runs go (`sync`), when its
 * account is kept in step by them (an IMAP account, a provider A mailbox), so an operator sees a grant
 * whose changes stopped arriving.
 */
export async function grantWithSync(grant: GrantRecord): Promise<Grant> {
  const resource = toGrantResource(grant);
  // Only grants with sync runs have a sync state: the others are answered with their one read.
  if (!MAIL_SYNCED_PROVIDERS.includes(grant.provider)) return resource;
  const state = await getSyncState(grant.id);
  if (!state) return resource;
  const watch = state.gmail?.watch ?? graphWatch(state);
  const now = clock.nowSeconds();
  return {
    ...resource,
    sync: {
      ...(state.last_run_at !== undefined ? { last_run_at: state.last_run_at } : {}),
      last_change_at: state.last_change_at,
      ...(state.last_push_at !== undefined ? { last_push_at: state.last_push_at } : {}),
      ...(state.last_error ? { last_error: state.last_error } : {}),
      ...(state.gmail || state.graph_mail || state.graph_push
        ? {
            push: watch
              ? {
                  state: watch.error
                    ? ('refused' as const)
                    : watch.expires_at <= now
                      ? ('lapsed' as const)
                      : ('active' as const),
                  ...(watch.topic ? { topic: watch.topic } : {}),
                  expires_at: watch.expires_at,
                  ...(watch.error ? { error: watch.error } : {}),
                }
              : { state: 'off' as const },
          }
        : {}),
    },
  };
}

export function conflictMessage(error: UniquenessConflictError, email: string, externalId?: string | null): string {
  switch (error.constraint) {
    case 'email':
      return `A grant for ${email} already exists in this application`;
    case 'agent_address':
      return `The address ${email} is already used by another Agent Account`;
    case 'external_id':
      return `external_id '${externalId}' is already used by another grant of this application`;
  }
}

export async function listGrants(
  app: ApplicationContext,
  query: ListGrantsQuery,
): Promise<{ items: GrantRecord[]; nextCursor?: string }> {
  if (query.account_id !== undefined || query.account_ids !== undefined) {
    throw new InvalidRequestError(
      "'account_id' and 'account_ids' name accounts migrated from an earlier API version; no grant here has one",
    );
  }
  if (query.workspace_id !== undefined)
    throw new InvalidRequestError(
      "'workspace_id' is not a filter of GET /v3/grants here: each grant answers its workspace_id (absent: the default workspace)",
    );
  if (query.sort_by === 'updated_at') {
    throw new InvalidRequestError(
      "'sort_by=updated_at' is not available: grants are listed by creation time (sort_by=created_at, order_by=asc|desc)",
    );
  }
  const limit = pageSize(query.limit);
  const offset = query.offset ?? 0;
  // `provider=` takes the API's names (nylas, or its alias agent); a name no provider answers to matches nothing.
  const provider = query.provider === undefined ? undefined : providerNamed(query.provider);
  if (query.provider !== undefined && provider === undefined) return { items: [] };

  if (query.email !== undefined) {
    // One grant at most per address: answer from the uniqueness item, no partition read.
    const grant = await grants.getGrantByEmail(app.applicationId, query.email);
    const matches = (g: GrantRecord) =>
      (provider === undefined || g.provider === provider) &&
      (query.grant_status === undefined || g.grant_status === query.grant_status) &&
      (query.since === undefined || g.created_at >= query.since) &&
      (query.before === undefined || g.created_at <= query.before) &&
      (query.ip === undefined || g.ip === query.ip);
    return { items: (grant && matches(grant) ? [grant] : []).slice(offset, offset + limit) };
  }
  const { pk, skPrefix } = grantsOfApplication(app.applicationId);
  const startKey = query.page_token ? decodeCursor(query.page_token, { pk, skPrefix }) : undefined;
  const page = await grants.listGrants(app.applicationId, {
    limit,
    offset,
    startKey,
    provider,
    grantStatus: query.grant_status,
    since: query.since,
    before: query.before,
    ip: query.ip,
    ascending: query.order_by === 'asc',
  });
  return { items: page.items, nextCursor: page.nextKey ? encodeCursor(page.nextKey) : undefined };
}

export async function updateGrant(grant: GrantRecord, body: UpdateGrantBody): Promise<GrantRecord> {
  accountHooksOf(grant.provider).update(body);
  try {
    return await grants.updateGrant(
      grant,
      { blocked: body.blocked, external_id: body.external_id, updated_at: clock.nowSeconds() },
      (next) => [
        {
          notification: newNotification({
            type: 'grant.updated',
            applicationId: grant.application_id,
            grantId: grant.id,
            object: toGrantResource(next),
          }),
        },
      ],
    );
  } catch (error) {
    if (error instanceof UniquenessConflictError)
      throw new ConflictError(conflictMessage(error, grant.email, body.external_id));
    if (error instanceof StaleWriteError) {
      throw new ConflictError('The grant was changed or deleted by another request; fetch it again and retry');
    }
    throw error;
  }
}

export async function deleteGrant(grant: GrantRecord): Promise<void> {
  try {
    // The grant is gone at once (nothing under it can be reached any more); its data is purged by a
    // job committed with the deletion, as is grant.deleted.
    await grants.deleteGrant(grant, accountHooksOf(grant.provider).deleted(grant), [
      {
        notification: newNotification({
          type: 'grant.deleted',
          applicationId: grant.application_id,
          grantId: grant.id,
          object: toGrantResource(grant),
        }),
      },
      {
        job: {
          kind: 'purge-grant',
          application_id: grant.application_id,
          grant_id: grant.id,
          provider: grant.provider,
        },
        id: newId('job'),
        applicationId: grant.application_id,
      },
    ]);
  } catch (error) {
    if (error instanceof StaleWriteError) throw new NotFoundError(`Grant '${grant.id}' not found`);
    throw error;
  }
}
