import { beforeAll, describe, expect, it } from 'vitest';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { createTestQueue, drainQueue } from '../support/queues';

/** Calendars of Agent Accounts over HTTP: the primary calendar, CRUD, filters and notifications. */
let fanout: string;
beforeAll(async () => {
  fanout = await createTestQueue('calendars-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
});
const { api, otherApi } = useApi();

describe('calendars', () => {
  it('gives every Agent Account a primary calendar, also reachable as primary, which cannot be deleted', async () => {
    const agent = await makeAgentGrant(api);
    const listed = await api.get(`/v3/grants/${agent.id}/calendars`);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data).toHaveLength(1);
    const [primary] = listed.body.data;
    expect(primary).toMatchObject({
      object: 'calendar',
      grant_id: agent.id,
      is_primary: true,
      read_only: false,
      is_owned_by_user: true,
      owner_email: agent.email,
      timezone: 'UTC',
    });
    expect((await api.get(`/v3/grants/${agent.id}/calendars/primary`)).body.data.id).toBe(primary.id);
    const removed = await api.delete(`/v3/grants/${agent.id}/calendars/primary`);
    expect(removed.status).toBe(400);
    expect(removed.body.error.message).toContain('primary calendar cannot be deleted');
  });

  it('creates, filters by metadata, updates and deletes calendars, with calendar.* notifications', async () => {
    const agent = await makeAgentGrant(api);
    await drainQueue(fanout, 5, 500);
    const created = await api.post(`/v3/grants/${agent.id}/calendars`, {
      name: 'Team',
      description: 'Shared',
      timezone: 'europe/berlin',
      hex_color: '#FFAA00',
      metadata: { key1: 'team-7' },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toMatchObject({
      name: 'Team',
      timezone: 'Europe/Berlin',
      hex_color: '#ffaa00',
      is_primary: false,
      metadata: { key1: 'team-7' },
    });
    const id = created.body.data.id;
    const filtered = await api.get(`/v3/grants/${agent.id}/calendars?metadata_pair=key1:team-7`);
    expect(filtered.body.data.map((c: { id: string }) => c.id)).toEqual([id]);
    expect((await api.get(`/v3/grants/${agent.id}/calendars?metadata_pair=key9:x`)).status).toBe(400);
    expect((await api.get(`/v3/grants/${agent.id}/calendars?select=id,name`)).body.data[1]).toEqual({
      id,
      name: 'Team',
    });
    const updated = await api.put(`/v3/grants/${agent.id}/calendars/${id}`, {
      name: 'Team B',
      timezone: 'America/New_York',
    });
    expect(updated.body.data).toMatchObject({ name: 'Team B', timezone: 'America/New_York', description: 'Shared' });
    expect((await api.delete(`/v3/grants/${agent.id}/calendars/${id}`)).status).toBe(200);
    expect((await api.get(`/v3/grants/${agent.id}/calendars/${id}`)).status).toBe(404);
    const events = await drainQueue(fanout, 3, 10_000);
    expect(events.map((e) => [e.body.type, e.body.data.object.id])).toEqual([
      ['calendar.created', id],
      ['calendar.updated', id],
      ['calendar.deleted', id],
    ]);
  });

  it.each([
    [{ name: 'x', timezone: 'Mars/Olympus' }, 'IANA time zone'],
    [{ name: 'x', hex_color: 'red' }, 'hex_color'],
    [{ timezone: 'UTC' }, 'name'],
    [{ name: 'x', metadata: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])) }, 'metadata'],
  ])('refuses %j with 400', async (body, fragment) => {
    const agent = await makeAgentGrant(api);
    const response = await api.post(`/v3/grants/${agent.id}/calendars`, body);
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.message).toContain(fragment);
  });

  it("answers 404 for another grant's or application's calendar", async () => {
    const [a, b] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
    const created = (await api.post(`/v3/grants/${a.id}/calendars`, { name: 'Mine' })).body.data;
    expect((await api.get(`/v3/grants/${b.id}/calendars/${created.id}`)).status).toBe(404);
    const other = await otherApi();
    expect((await other.get(`/v3/grants/${a.id}/calendars/${created.id}`)).status).toBe(404);
    expect((await api.get(`/v3/grants/${a.id}/calendars/cal_01jd6abcdefghjkmnpqrstvwxy`)).status).toBe(404);
  });
});
