import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GoogleFake } from '../../scripts/local-stack/google/server';
import type { GraphFake } from '../../scripts/local-stack/microsoft/server';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { liveFakes } from '../support/live-fakes';
import { connectFakeGoogleGrant } from '../support/google';
import { connectFakeMicrosoftGrant } from '../support/microsoft';
import { checkResponse } from '../support/response-check';

/**
 * `GET /v3/grants/{id}/resources` over HTTP: a google grant's rooms from the Admin SDK Directory's
 * calendar resources, a microsoft grant's from Graph's places (both against the local fakes, which
 * check every request and answer against the providers' descriptions), paged; a grant without the
 * directory scope refused with the scope named, before the provider is called; an Agent Account's
 * list empty. Every answer conforms to the contract.
 */
const DIRECTORY_SCOPE = 'https://www.googleapis.com/auth/admin.directory.resource.calendar.readonly';
let gateway: Gateway;
let google: GoogleFake;
let graph: GraphFake;
const fakes = liveFakes();
let api: ApiClient;
let applicationId: string;

interface Room {
  object: string;
  grant_id: string;
  email: string;
  name: string;
  capacity?: number;
  building?: string;
  floor_name?: string;
  floor_number?: number;
  floor_section?: string;
}

async function get(path: string): Promise<ApiResponse> {
  const response = await api.get(path);
  const url = new URL(path, 'http://x');
  expect(checkResponse('GET', url.pathname, url.searchParams, response.status, response.body)).toEqual([]);
  return response;
}

/** Every page of a grant's rooms, `limit` at a time. */
async function allRooms(grant: string, limit: number): Promise<{ rooms: Room[]; pages: number }> {
  const rooms: Room[] = [];
  let cursor: string | undefined;
  for (let pages = 1; pages <= 20; pages++) {
    const response = await get(
      `/v3/grants/${grant}/resources?limit=${limit}${cursor ? `&page_token=${encodeURIComponent(cursor)}` : ''}`,
    );
    expect(response.status, response.text).toBe(200);
    rooms.push(...(response.body.data as Room[]));
    cursor = response.body.next_cursor as string | undefined;
    if (!cursor) return { rooms, pages };
  }
  throw new Error('the listing did not end within 20 pages');
}

beforeAll(async () => {
  [gateway, { google, graph }] = await Promise.all([startGateway(), fakes.start()]);
  const app = await makeApplication('room resources');
  api = apiClient(gateway.url, app.apiKey);
  applicationId = app.applicationId;
});

afterAll(async () => {
  await gateway?.close();
});

describe('Room resources of a google grant', () => {
  it("lists the Workspace's conference rooms (not its other resources), page by page", async () => {
    // Prepare
    const { grant } = await connectFakeGoogleGrant(google, 'room resources', {
      applicationId,
      scope: ['https://www.googleapis.com/auth/calendar', DIRECTORY_SCOPE],
    });
    const added = google.addCalendarResource({ resourceId: 'room-attic', resourceName: 'Attic', capacity: 2 });

    // Act
    const { rooms, pages } = await allRooms(grant.id, 2);

    // Assess
    expect(pages).toBe(2);
    expect(rooms.map((r) => r.name)).toEqual(['Attic', 'Dock', 'Harbour', 'Lighthouse']);
    const harbour = rooms.find((r) => r.name === 'Harbour')!;
    expect(harbour).toEqual({
      object: 'room_resource',
      grant_id: grant.id,
      email: expect.stringMatching(/^c_\d+@resource\.calendar\.google\.com$/),
      name: 'Harbour',
      capacity: 8,
      building: 'HQ',
      floor_name: '2',
      floor_number: 2,
      floor_section: 'East',
    });
    // A floor named in words has no number.
    expect(rooms.find((r) => r.name === 'Lighthouse')).not.toHaveProperty('floor_number');
    expect(rooms.find((r) => r.name === 'Attic')).toEqual({
      object: 'room_resource',
      grant_id: grant.id,
      email: added.resourceEmail,
      name: 'Attic',
      capacity: 2,
    });
  });

  it('refuses a grant without the directory scope, naming it', async () => {
    // Prepare: Google would answer this grant, so only the scope check can refuse it.
    const { grant } = await connectFakeGoogleGrant(google, 'room resources', {
      applicationId,
      scope: ['https://www.googleapis.com/auth/calendar'],
    });

    // Act
    const response = await get(`/v3/grants/${grant.id}/resources`);

    // Assess
    expect(response.status, response.text).toBe(403);
    expect(response.body.error.message).toContain(DIRECTORY_SCOPE);
  });

  it('answers 403 saying why when Google refuses an account that may not read the directory (the scope is not enough)', async () => {
    // Prepare: the scope given, the privilege not (Google's own 403).
    const { grant, email } = await connectFakeGoogleGrant(google, 'room resources', {
      applicationId,
      scope: [DIRECTORY_SCOPE],
    });
    google.setDirectoryAdmin(email, false);

    // Act
    const response = await get(`/v3/grants/${grant.id}/resources`);

    // Assess
    expect(response.status, response.text).toBe(403);
    expect(response.body.error.message).toContain('may not read its Workspace');
    expect(response.body.error.message).toContain('Not Authorized to access this resource/api');
  });
});

describe('Room resources of a microsoft grant', () => {
  it("lists the tenant's rooms, page by page", async () => {
    // Prepare
    const { grant } = await connectFakeMicrosoftGrant(graph, 'room resources', {
      applicationId,
      scope: ['Calendars.ReadWrite', 'Place.Read.All', 'offline_access'],
    });
    graph.addRoom({ displayName: 'Summit', emailAddress: 'summit@rooms.example.com' });
    graph.clearViolations();

    // Act
    const { rooms, pages } = await allRooms(grant.id, 3);

    // Assess
    expect(pages).toBe(2);
    expect(rooms.map((r) => r.name)).toEqual(['Fjord', 'Glacier', 'Tundra', 'Summit']);
    expect(rooms[0]).toEqual({
      object: 'room_resource',
      grant_id: grant.id,
      email: 'fjord@rooms.example.com',
      name: 'Fjord',
      capacity: 10,
      building: 'Main',
      floor_name: 'Third',
      floor_number: 3,
    });
    expect(rooms[3]).toEqual({
      object: 'room_resource',
      grant_id: grant.id,
      email: 'summit@rooms.example.com',
      name: 'Summit',
    });
    expect(graph.requests().filter((r) => r.path.startsWith('/v1.0/places/'))).toHaveLength(2);
  });

  it('refuses a grant without Place.Read.All before Graph is called, and a page token of another grant', async () => {
    // Prepare
    const without = await connectFakeMicrosoftGrant(graph, 'room resources', {
      applicationId,
      scope: ['Calendars.ReadWrite', 'offline_access'],
    });
    const other = await connectFakeMicrosoftGrant(graph, 'room resources', {
      applicationId,
      scope: ['Place.Read.All'],
    });
    const withPlaces = await connectFakeMicrosoftGrant(graph, 'room resources', {
      applicationId,
      scope: ['Place.Read.All'],
    });
    const first = await get(`/v3/grants/${other.grant.id}/resources?limit=1`);
    const before = graph.requests().length;

    // Act
    const refused = await get(`/v3/grants/${without.grant.id}/resources`);
    const foreignToken = await get(
      `/v3/grants/${withPlaces.grant.id}/resources?page_token=${encodeURIComponent(first.body.next_cursor as string)}`,
    );

    // Assess
    expect(refused.status, refused.text).toBe(403);
    expect(refused.body.error.message).toContain('Place.Read.All');
    expect(foreignToken.status, foreignToken.text).toBe(400);
    expect(foreignToken.body.error.message).toContain('page_token');
    expect(graph.requests()).toHaveLength(before);
  });
});

describe('Room resources of an Agent Account', () => {
  it('is an empty list: Agent Accounts have no directory of rooms', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);

    // Act
    const response = await get(`/v3/grants/${grant.id}/resources`);

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual([]);
    expect(response.body).not.toHaveProperty('next_cursor');
  });

  it("is not another application's to list", async () => {
    // Prepare
    const stranger = apiClient(gateway.url, (await makeApplication('room resources, another')).apiKey);
    const grant = await makeAgentGrant(api);

    // Act
    const response = await stranger.get(`/v3/grants/${grant.id}/resources`);

    // Assess
    expect(response.status, response.text).toBe(404);
  });
});
