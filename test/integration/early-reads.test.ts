import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { dynamo } from '#shared/aws/dynamodb';
import type { GrantRecord } from '#shared/db/grants';
import { connectorKey, grantKey, providerTokensKey } from '#shared/db/keys';
import type { ApplicationId } from '#shared/ids';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Early reads (shared/accounts/early-reads.ts), over HTTP: once a request of a connected grant has read
 * its provider tokens and its connector, the grant's next request, naming it by ID, reads both while
 * the grant itself is read, not after; a grant that needs neither (an Agent Account) never reads
 * them; and a request naming another application's grant reads nothing of that grant but the
 * refused lookup. DynamoDB calls are observed, not timed: which reads began before the grant's
 * lookup had answered.
 */
let fake: GoogleFake;
let gateway: Gateway;
let owner: ApiClient;
let grant: GrantRecord;
let appId: ApplicationId;

beforeAll(async () => {
  fake = await startGoogleFake();
  const app = await makeApplication('early reads');
  appId = app.applicationId as ApplicationId;
  ({ grant } = await connectFakeGoogleGrant(fake, 'early reads', { applicationId: app.applicationId }));
  gateway = await startGateway();
  owner = apiClient(gateway.url, app.apiKey);
});

afterAll(async () => {
  await gateway?.close();
  await fake?.close();
});

interface Read {
  pk: string;
  sk: string;
  started: number;
  settled?: number;
}

/** The GetItem calls made while `act` runs, in the order they began, with when each began and answered. */
async function readsDuring(act: () => Promise<void>): Promise<Read[]> {
  const reads: Read[] = [];
  let tick = 0;
  const send = dynamo.send.bind(dynamo);
  const spy = vi.spyOn(dynamo, 'send').mockImplementation(((
    command: { constructor: { name: string }; input: { Key?: { pk: string; sk: string } } },
    ...rest: unknown[]
  ) => {
    const key = command.input.Key;
    const read: Read | undefined =
      command.constructor.name === 'GetCommand' && key ? { pk: key.pk, sk: key.sk, started: tick++ } : undefined;
    if (read) reads.push(read);
    const answer = (send as (...args: unknown[]) => Promise<unknown>)(command, ...rest);
    return answer.finally(() => {
      if (read) read.settled = tick++;
    });
  }) as never);
  try {
    await act();
  } finally {
    spy.mockRestore();
  }
  return reads;
}

const same = (read: Read, key: { pk: string; sk: string }) => read.pk === key.pk && read.sk === key.sk;

describe('early reads of a connected grant', () => {
  it("reads the grant's provider tokens and connector while the grant is read, from its second request on", async () => {
    // Prepare: a first request teaches this instance what the grant's requests read.
    const first = await owner.get(`/v3/grants/${grant.id}/calendars`);
    expect(first.status, first.text).toBe(200);

    // Act
    let answer: Awaited<ReturnType<ApiClient['get']>> | undefined;
    const reads = await readsDuring(async () => {
      answer = await owner.get(`/v3/grants/${grant.id}/calendars`);
    });

    // Assess: each of the three began before the grant's lookup answered, and each was read once.
    expect(answer!.status, answer!.text).toBe(200);
    const lookup = reads.find((r) => same(r, grantKey(appId, grant.id as never)));
    const tokens = reads.filter((r) => same(r, providerTokensKey(grant.id as never)));
    const connector = reads.filter((r) => same(r, connectorKey(appId, 'google')));
    expect(lookup?.settled).toBeDefined();
    expect(tokens).toHaveLength(1);
    expect(connector).toHaveLength(1);
    expect(tokens[0]!.started).toBeLessThan(lookup!.settled!);
    expect(connector[0]!.started).toBeLessThan(lookup!.settled!);
  });

  it('never reads provider tokens for a grant that has none (an Agent Account)', async () => {
    // Prepare
    const agent = await makeAgentGrant(owner);
    await owner.get(`/v3/grants/${agent.id}/folders`);

    // Act
    const reads = await readsDuring(async () => {
      const r = await owner.get(`/v3/grants/${agent.id}/folders`);
      expect(r.status, r.text).toBe(200);
    });

    // Assess
    expect(reads.filter((r) => r.sk === 'provider_tokens')).toEqual([]);
  });

  it("reads nothing of another application's grant named by its ID", async () => {
    // Prepare
    const stranger = await makeApplication('early reads stranger');
    const api = apiClient(gateway.url, stranger.apiKey);

    // Act
    const reads = await readsDuring(async () => {
      const r = await api.get(`/v3/grants/${grant.id}/calendars`);
      expect(r.status, r.text).toBe(404);
    });

    // Assess: only the lookup in the stranger's own partition.
    expect(reads.filter((r) => same(r, providerTokensKey(grant.id as never)))).toEqual([]);
    expect(reads.filter((r) => same(r, connectorKey(appId, 'google')))).toEqual([]);
  });
});
