import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it } from 'vitest';
import { TABLE_NAME, dynamo } from '#shared/aws/dynamodb';
import { appConfigurationKey, configurationKey, configurationSlugKey } from '#shared/db/keys';
import { getConfiguration } from '#shared/db/scheduling';
import type { ApplicationId, ConfigurationId } from '#shared/ids';
import { migrateSlugs } from '#shared/scheduling/slug-migration';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';

/**
 * The upgrade to slugs unique across applications: configurations saved by the version before
 * (a slug item per application, and an owner item per slug and application) keep their booking page
 * links after `npm run admin -- migrate-slugs`, and no other application can take their slugs then.
 * The old items are written here as that version wrote them.
 */
const { api, gateway, applicationId, otherApi } = useApi();
const guest = (): ApiClient => apiClient(gateway().url);
const unique = () => `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
const allDay = [{ days: [0, 1, 2, 3, 4, 5, 6], timezone: 'UTC', start: '9:00', end: '17:00' }];

async function configuration(client: ApiClient, title: string, slug?: string) {
  const organizer = await makeAgentGrant(client);
  const response = await client.post(`/v3/grants/${organizer.id}/scheduling/configurations`, {
    ...(slug ? { slug } : {}),
    participants: [
      {
        email: organizer.email,
        is_organizer: true,
        availability: { calendar_ids: ['primary'], open_hours: allDay },
        booking: { calendar_id: 'primary' },
      },
    ],
    availability: { duration_minutes: 30 },
    event_booking: { title },
  });
  expect(response.status, response.text).toBe(201);
  return response.body.data as { id: string; slug?: string };
}

/** Turns a configuration into one the previous version saved with `slug`. */
async function asSavedBefore(appId: string, configId: string, slug: string) {
  await dynamo.send(
    new DeleteCommand({
      TableName: TABLE_NAME,
      Key: configurationSlugKey(slug),
      ConditionExpression: 'attribute_not_exists(pk) OR configuration_id = :id',
      ExpressionAttributeValues: { ':id': configId },
    }),
  );
  for (const key of [
    configurationKey(configId as ConfigurationId),
    appConfigurationKey(appId as ApplicationId, configId as ConfigurationId),
  ]) {
    await dynamo.send(
      new UpdateCommand({
        TableName: TABLE_NAME,
        Key: key,
        UpdateExpression: 'SET slug = :s',
        ExpressionAttributeValues: { ':s': slug },
      }),
    );
  }
  await dynamo.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: { pk: `app#${appId}`, sk: `slug#${slug}`, entity: 'configuration_slug', configuration_id: configId },
    }),
  );
  await dynamo.send(
    new PutCommand({
      TableName: TABLE_NAME,
      Item: { pk: `slug#${slug}`, sk: appId, entity: 'configuration_slug_owner', configuration_id: configId },
    }),
  );
}

const exists = async (key: { pk: string; sk: string }) =>
  Boolean((await dynamo.send(new GetCommand({ TableName: TABLE_NAME, Key: key, ConsistentRead: true }))).Item);

describe('migrate-slugs: the upgrade to slugs unique across applications', () => {
  it('keeps every existing booking page link, gives a shared slug to the oldest configuration, and runs once', async () => {
    // Prepare: A's page "solo" (its slug alone), and "shared", used by A first and then by B.
    const other = await otherApi('slug-migration-b');
    const solo = `solo-${unique()}`;
    const shared = `shared-${unique()}`;
    const a1 = await configuration(api, 'Solo call');
    const a2 = await configuration(api, 'Older call');
    const b1 = await configuration(other, 'Newer call');
    const bApp = (await getConfiguration(b1.id as ConfigurationId))!.application_id;
    await asSavedBefore(applicationId(), a1.id, solo);
    await asSavedBefore(applicationId(), a2.id, shared);
    await asSavedBefore(bApp, b1.id, shared);
    // Without the migration the old links are dead, and another application could take them.
    expect((await guest().get(`/scheduling/${solo}`)).status).toBe(404);

    // Act
    const result = await migrateSlugs();

    // Assess: the links work again, for their own configuration.
    const soloPage = await guest().get(`/scheduling/${solo}`);
    expect(soloPage.status, soloPage.text).toBe(200);
    expect(soloPage.text).toContain('Solo call');
    const sharedPage = await guest().get(`/scheduling/${shared}`);
    expect(sharedPage.status).toBe(200);
    expect(sharedPage.text).toContain('Older call');
    expect(result.kept).toEqual(
      expect.arrayContaining([
        { slug: solo, application_id: applicationId(), configuration_id: a1.id },
        { slug: shared, application_id: applicationId(), configuration_id: a2.id },
      ]),
    );
    expect(result.cleared).toEqual([{ slug: shared, application_id: bApp, configuration_id: b1.id, kept_by: a2.id }]);
    // B's configuration lost the slug (and works on by ID); nobody can take the kept ones.
    const b = await other.get(`/v3/scheduling/configurations/${b1.id}`);
    expect(b.status, b.text).toBe(200);
    expect(b.body.data.slug ?? null).toBeNull();
    for (const slug of [solo, shared]) {
      const taken = await configuration(other, 'Squatter').then(({ id }) =>
        other.put(`/v3/scheduling/configurations/${id}`, { slug }),
      );
      expect(taken.status, taken.text).toBe(409);
      expect(taken.body.error.type).toBe('conflict_error');
      expect(taken.body.error.message).toContain(slug);
    }
    // The old items are gone; A can still move and free its slug as any configuration can.
    for (const key of [
      { pk: `app#${applicationId()}`, sk: `slug#${solo}` },
      { pk: `slug#${solo}`, sk: applicationId() },
      { pk: `slug#${shared}`, sk: bApp },
    ])
      expect(await exists(key), JSON.stringify(key)).toBe(false);
    const moved = await api.put(`/v3/scheduling/configurations/${a1.id}`, { slug: `${solo}-2` });
    expect(moved.status, moved.text).toBe(200);
    expect((await guest().get(`/scheduling/${solo}`)).status).toBe(404);

    // A second run finds nothing left to do.
    const again = await migrateSlugs();
    expect(again.kept.filter((k) => [solo, shared].includes(k.slug))).toEqual([]);
    expect(again.cleared.filter((k) => [solo, shared].includes(k.slug))).toEqual([]);
  });
});
