import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GoogleFake } from '../../scripts/local-stack/google/server';
import type { GraphFake } from '../../scripts/local-stack/microsoft/server';
import { apiClient, type ApiClient } from '../support/api';
import { makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { liveFakes } from '../support/live-fakes';
import { connectFakeGoogleGrant } from '../support/google';
import { connectFakeMicrosoftGrant } from '../support/microsoft';
import { publishedBesidesDeliveries } from '../support/outbox-relay';
import { createTestQueue, drainQueue } from '../support/queues';

/**
 * Open and link tracking of messages sent by live providers (A's Gmail, B's Graph, their local
 * fakes): the MIME handed to the provider is rewritten as an Agent Account's is; its URLs name an ID
 * of ours, since the provider names the message only once it has left, and the tracked message is
 * then recorded under the provider's ID: the notifications and `fields=include_tracking_options`
 * name the message as the API answers it.
 */
let gateway: Gateway;
let google: GoogleFake;
let graph: GraphFake;
const fakes = liveFakes();
let api: ApiClient;
let fanout: string;
const grants: Record<'google' | 'microsoft', string> = { google: '', microsoft: '' };
const HOSTNAME = 'links.example.com';
const BODY = '<html><body><p>See <a href="https://shop.example.com/item?id=9">the item</a>.</p></body></html>';

beforeAll(async () => {
  fanout = await createTestQueue('live-tracking-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
  [gateway, { google, graph }] = await Promise.all([startGateway(), fakes.start()]);
  const app = await makeApplication('live tracking');
  api = apiClient(gateway.url, app.apiKey);
  grants.google = (
    await connectFakeGoogleGrant(google, 'live tracking', { applicationId: app.applicationId })
  ).grant.id;
  grants.microsoft = (
    await connectFakeMicrosoftGrant(graph, 'live tracking', { applicationId: app.applicationId })
  ).grant.id;
  await drainQueue(fanout, 10, 500);
});

afterAll(async () => {
  await gateway?.close();
});

const hit = (url: string) =>
  fetch(gateway.url + new URL(url).pathname, {
    redirect: 'manual',
    headers: { 'user-agent': 'Mozilla/5.0 (Macintosh) AppleWebKit/605.1.15 Mail/16.0' },
  });

describe.each(['google', 'microsoft'] as const)('tracking a message sent by %s', (provider) => {
  it('rewrites what the provider sends, and announces the first open and click under the provider’s message ID', async () => {
    // Act: the send
    const sent = await api.post(`/v3/grants/${grants[provider]}/messages/send`, {
      to: [{ email: uniqueEmail('reader').replace('@agents.test', '@example.net') }],
      subject: `Tracked by ${provider}`,
      body: BODY,
      tracking_options: { opens: true, links: true, label: 'spring', domain_name: HOSTNAME },
    });

    // Assess: the provider holds the rewritten message (its Sent copy is the MIME it sent).
    expect(sent.status, sent.text).toBe(200);
    const id = sent.body.data.id as string;
    expect(id).not.toMatch(/^msg_/);
    const read = await api.get(`/v3/grants/${grants[provider]}/messages/${encodeURIComponent(id)}`);
    expect(read.status, read.text).toBe(200);
    const html = read.body.data.body as string;
    const pixel = html.match(/<img src="(https:\/\/links\.example\.com\/t\/o\/[^"]+)"/)?.[1];
    const link = html.match(/href="(https:\/\/links\.example\.com\/t\/l\/[^"]+)"/)?.[1];
    expect(pixel).toBeDefined();
    expect(link).toBeDefined();
    const options = await api.get(
      `/v3/grants/${grants[provider]}/messages/${encodeURIComponent(id)}?fields=include_tracking_options`,
    );
    expect(options.status, options.text).toBe(200);
    expect(options.body.data.tracking_options).toEqual({
      opens: true,
      links: true,
      thread_replies: false,
      label: 'spring',
    });

    // Act: two opens and a click
    const opens = [await hit(pixel!), await hit(pixel!)];
    const click = await hit(link!.replace(/&amp;/g, '&'));

    // Assess
    for (const open of opens) expect(open.status).toBe(200);
    expect(click.status).toBe(302);
    expect(click.headers.get('location')).toBe('https://shop.example.com/item?id=9');
    const events = await publishedBesidesDeliveries(fanout);
    expect(events.map((e) => e.type)).toEqual(['message.link_clicked', 'message.opened']);
    for (const event of events) {
      expect(event.data.grant_id).toBe(grants[provider]);
      expect(event.data.object).toMatchObject({ message_id: id, label: 'spring' });
    }
  });

  it('answers include_tracking_options for a message sent without tracking: all off', async () => {
    const sent = await api.post(`/v3/grants/${grants[provider]}/messages/send`, {
      to: [{ email: uniqueEmail('reader').replace('@agents.test', '@example.net') }],
      subject: `Untracked by ${provider}`,
      body: BODY,
    });
    expect(sent.status, sent.text).toBe(200);
    const listed = await api.get(
      `/v3/grants/${grants[provider]}/messages?fields=include_tracking_options&subject=${encodeURIComponent(`Untracked by ${provider}`)}`,
    );
    expect(listed.status, listed.text).toBe(200);
    expect(listed.body.data.map((m: { tracking_options: unknown }) => m.tracking_options)).toEqual([
      { opens: false, links: false, thread_replies: false },
    ]);
    expect(listed.body.data[0].body).toContain('<a href="https://shop.example.com/item?id=9">');
  });
});
