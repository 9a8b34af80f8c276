import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { createTestQueue, drainQueue } from '../support/queues';

let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
let queueUrl: string;

beforeAll(async () => {
  // This file's functions publish to a queue of its own (set before any handler module loads).
  queueUrl = await createTestQueue('fanout');
  process.env.FANOUT_QUEUE_URL = queueUrl;
  gateway = await startGateway();
  const app = await makeApplication();
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
});

afterAll(async () => {
  await gateway?.close();
});

describe('notification publisher', () => {
  it('puts grant.created and grant.deleted on the fan-out queue with the payload shape', async () => {
    // Act
    const grant = await makeAgentGrant(api);
    expect((await api.delete(`/v3/grants/${grant.id}`)).status).toBe(200);

    // Assess
    const messages = await drainQueue(queueUrl, 2);
    expect(messages.map((m) => m.body.type)).toEqual(['grant.created', 'grant.deleted']);
    for (const { body, attributes } of messages) {
      expect(Object.keys(body).sort()).toEqual(['data', 'id', 'source', 'specversion', 'time', 'type']);
      expect(body.specversion).toBe('1.0');
      expect(body.id).toMatch(/^ntf_[0-9a-z]{26}$/);
      expect(body.source).toBe('/switchboard');
      expect(Number.isInteger(body.time)).toBe(true);
      expect(body.data).toEqual({ application_id: applicationId, grant_id: grant.id, object: grant });
      expect(attributes).toEqual({ type: body.type, application_id: applicationId });
    }
    expect(messages[0]!.body.id).not.toBe(messages[1]!.body.id);
  });

  it('publishes nothing for rejected requests', async () => {
    const grant = await makeAgentGrant(api);
    await drainQueue(queueUrl, 1);
    expect(
      (await api.post('/v3/connect/custom', { provider: 'agent', settings: { email_address: grant.email } })).status,
    ).toBe(409);
    expect((await api.delete('/v3/grants/grant_01jzzzzzzzzzzzzzzzzzzzzzzz')).status).toBe(404);
    expect(await drainQueue(queueUrl, 1, 1500)).toEqual([]);
  });

  it('commits grant.updated and folder.created, folder.updated, folder.deleted with their changes', async () => {
    const grant = await makeAgentGrant(api);
    await drainQueue(queueUrl, 1);
    const patched = await api.patch(`/v3/grants/${grant.id}`, { external_id: `ext-${grant.id}` });
    expect(patched.status, patched.text).toBe(200);
    const created = (await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Receipts' })).body.data;
    const renamed = (await api.put(`/v3/grants/${grant.id}/folders/${created.id}`, { name: 'Invoices' })).body.data;
    expect((await api.delete(`/v3/grants/${grant.id}/folders/${created.id}`)).status).toBe(200);
    const events = await drainQueue(queueUrl, 4);
    expect(events.map((e) => e.body.type)).toEqual([
      'grant.updated',
      'folder.created',
      'folder.updated',
      'folder.deleted',
    ]);
    expect(events[0]!.body.data.object).toEqual(patched.body.data);
    expect(events[1]!.body.data).toEqual({ application_id: applicationId, grant_id: grant.id, object: created });
    expect(events[2]!.body.data.object).toEqual(renamed);
    expect(events[3]!.body.data.object).toMatchObject({ id: created.id, name: 'Invoices' });
  });
});
