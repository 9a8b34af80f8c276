import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestMessage } from '#shared/agent/ingest';
import type { GrantId, MessageId } from '#shared/ids';
import { clickedLinksOf, getTrackedMessage } from '#shared/tracking/records';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { sunkRaw, waitForSunk } from '../support/mail';
import { outboxDrained, publishedBesidesDeliveries } from '../support/outbox-relay';
import { createTestQueue, drainQueue } from '../support/queues';

/**
 * Open and link tracking of Agent Account sends: the signed pixel and redirects on the tracking
 * hostname (served by the tracking function, driven here through the local gateway), the events
 * stored per message, message.opened / message.link_clicked once per first open / first click of a
 * link, automated requests counted apart, forged tokens refused; thread.replied for replies to a
 * tracked message; fields=include_tracking_options.
 */
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
let queueUrl: string;
type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
let alice: Grant;

const outside = () => uniqueEmail('person').replace('@agents.test', '@example.net');
const HOSTNAME = 'links.example.com';
const BODY =
  '<html><body><p>Hi! See <a href="https://shop.example.com/item?id=7&amp;ref=mail">the item</a>, ' +
  "<a class='x' href='http://docs.example.org/guide'>the guide</a>, " +
  '<a href="mailto:help@example.com">mail us</a> and <a href="#top">top</a>.</p></body></html>';

beforeAll(async () => {
  queueUrl = await createTestQueue('tracking-fanout');
  process.env.FANOUT_QUEUE_URL = queueUrl;
  gateway = await startGateway();
  const app = await makeApplication();
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
  alice = await makeAgentGrant(api);
  await drainQueue(queueUrl, 1);
});

afterAll(async () => gateway?.close());

/** Sends a tracked message to an outside address: the Sent copy and the HTML that left. */
async function sendTracked(tracking: Record<string, unknown>, body = BODY) {
  const to = outside();
  const sent = await api.post(`/v3/grants/${alice.id}/messages/send`, {
    to: [{ email: to }],
    subject: 'Tracked',
    body,
    tracking_options: tracking,
  });
  expect(sent.status, sent.text).toBe(200);
  const [sunk] = await waitForSunk(to);
  const parsed = await simpleParser(await sunkRaw(sunk!.id));
  await outboxDrained();
  // Its message.created, and the relay's answer for the outside recipient (message.delivered).
  const own = await drainQueue(queueUrl, 2);
  expect(own.map((e) => e.body.type).sort()).toEqual(['message.created', 'message.delivered']);
  return { message: sent.body.data, html: String(parsed.html), messageIdHeader: parsed.messageId! };
}

/** The tracking URLs of a sent HTML body, as paths on the local gateway (the tracking hostname points at the API). */
function trackingPaths(html: string) {
  const hrefs = [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
  const pixel = html.match(/<img src="([^"]+)"/)?.[1];
  const path = (url: string) => new URL(url).pathname;
  return { hrefs, links: hrefs.filter((h) => h.includes('/t/l/')).map(path), pixel: pixel && path(pixel) };
}

const hit = (path: string, headers: Record<string, string> = {}) =>
  fetch(gateway.url + path, {
    redirect: 'manual',
    headers: { 'user-agent': 'Mozilla/5.0 (Windows NT 10.0) Thunderbird/128.0', ...headers },
  });

/** Exactly `count` notifications since the last drain besides the relay's answers, by type then time. */
async function published(count: number) {
  const events = await publishedBesidesDeliveries(queueUrl);
  expect(events).toHaveLength(count);
  return events;
}

describe('sending a tracked message', () => {
  it('rewrites http(s) links to signed redirects and adds the open pixel on the tracking hostname; the Sent copy is left as written', async () => {
    // Act
    const { message, html } = await sendTracked({ opens: true, links: true, label: 'spring', domain_name: HOSTNAME });

    // Assess
    const { hrefs, links, pixel } = trackingPaths(html);
    expect(hrefs).toHaveLength(4);
    expect(hrefs[0]).toMatch(new RegExp(`^https://${HOSTNAME}/t/l/[\\w-]+\\.[\\w-]+$`));
    expect(hrefs[1]).toMatch(new RegExp(`^https://${HOSTNAME}/t/l/`));
    expect(hrefs.slice(2)).toEqual(['mailto:help@example.com', '#top']);
    expect(html).toContain("<a class='x' href=");
    expect(links).toHaveLength(2);
    expect(pixel).toMatch(/^\/t\/o\/[\w-]+\.[\w-]+$/);
    // The pixel sits before </body>.
    expect(html).toMatch(/<img src="https:\/\/links\.example\.com\/t\/o\/[^"]+" width="1" height="1"[^>]*><\/body>/);
    const stored = await api.get(`/v3/grants/${alice.id}/messages/${message.id}`);
    expect(stored.body.data.body).toBe(BODY);
  });

  it('leaves the body as it is when nothing is tracked, and when only thread replies are', async () => {
    const plain = await sendTracked({ opens: false, links: false });
    const replies = await sendTracked({ thread_replies: true });
    for (const { html } of [plain, replies]) {
      expect(trackingPaths(html).links).toEqual([]);
      expect(html).not.toContain('/t/o/');
      expect(html).toContain('href="https://shop.example.com/item?id=7&amp;ref=mail"');
    }
  });

  it('answers fields=include_tracking_options with the settings of each message', async () => {
    const tracked = await sendTracked({ opens: true, thread_replies: true, label: 'Q4 offer' });
    const untracked = await sendTracked({});

    const one = await api.get(`/v3/grants/${alice.id}/messages/${tracked.message.id}?fields=include_tracking_options`);
    const list = await api.get(`/v3/grants/${alice.id}/messages?fields=include_tracking_options&limit=50`);

    expect(one.status, one.text).toBe(200);
    expect(one.body.data.tracking_options).toEqual({
      opens: true,
      links: false,
      thread_replies: true,
      label: 'Q4 offer',
    });
    expect(one.body.data.body).toBe(BODY);
    expect(list.status, list.text).toBe(200);
    const byId = new Map(
      list.body.data.map((m: { id: string; tracking_options: unknown }) => [m.id, m.tracking_options]),
    );
    expect(byId.get(tracked.message.id)).toEqual(one.body.data.tracking_options);
    expect(byId.get(untracked.message.id)).toEqual({ opens: false, links: false, thread_replies: false });
  });

  it('tracks a draft sent with tracking options', async () => {
    const to = outside();
    const draft = await api.post(`/v3/grants/${alice.id}/drafts`, {
      to: [{ email: to }],
      subject: 'Draft tracked',
      body: BODY,
      tracking_options: { opens: true, links: true, domain_name: HOSTNAME },
    });
    expect(draft.status, draft.text).toBe(200);

    const sent = await api.post(`/v3/grants/${alice.id}/drafts/${draft.body.data.id}`);

    expect(sent.status, sent.text).toBe(200);
    const html = String((await simpleParser(await sunkRaw((await waitForSunk(to))[0]!.id))).html);
    expect(trackingPaths(html).links).toHaveLength(2);
    expect(trackingPaths(html).pixel).toBeDefined();
    const tracked = await getTrackedMessage(alice.id as GrantId, sent.body.data.id as MessageId);
    expect(tracked).toMatchObject({ opens: true, links: true, thread_replies: false, domain_name: HOSTNAME });
    await outboxDrained();
    await drainQueue(queueUrl, 1);
  });
});

describe('the open pixel', () => {
  it('answers a 1x1 GIF and announces message.opened once, at the first open by a person', async () => {
    // Prepare
    const { message, html } = await sendTracked({ opens: true, links: true, label: 'opens', domain_name: HOSTNAME });
    const { pixel, links } = trackingPaths(html);

    // Act: a prefetch and a scanner first, then six opens at once, then a later open
    const prefetch = await hit(pixel!, { 'sec-purpose': 'prefetch' });
    const scanner = await hit(pixel!, { 'user-agent': 'Mozilla/5.0 (compatible; Barracuda Sentinel)' });
    const opens = await Promise.all(Array.from({ length: 6 }, () => hit(pixel!)));
    const later = await hit(pixel!);

    // Assess
    for (const r of [prefetch, scanner, ...opens, later]) {
      expect(r.status).toBe(200);
      expect(r.headers.get('content-type')).toBe('image/gif');
      // No cache keeps it: a later open loads it again, and is counted.
      expect(r.headers.get('cache-control')).toBe('no-store');
      const gif = Buffer.from(await r.arrayBuffer());
      expect(gif.subarray(0, 6).toString('latin1')).toBe('GIF89a');
      expect(gif.readUInt16LE(6)).toBe(1);
      expect(gif.readUInt16LE(8)).toBe(1);
    }
    // A first click is the sentinel: only the one message.opened comes before it.
    expect((await hit(links[0]!)).status).toBe(302);
    const events = await published(2);
    expect(events.map((e) => e.type)).toEqual(['message.link_clicked', 'message.opened']);
    events.reverse();
    expect(events[0].data).toMatchObject({ application_id: applicationId, grant_id: alice.id });
    expect(events[0].data.object).toEqual({
      message_id: message.id,
      label: 'opens',
      sender_app_id: applicationId,
      timestamp: expect.any(Number),
      message_data: { count: 1, timestamp: events[0].data.object.timestamp },
      recents: [
        {
          opened_id: 0,
          ip: expect.any(String),
          user_agent: 'Mozilla/5.0 (Windows NT 10.0) Thunderbird/128.0',
          timestamp: events[0].data.object.timestamp,
        },
      ],
    });
    const stored = await getTrackedMessage(alice.id as GrantId, message.id as MessageId);
    expect(stored).toMatchObject({ open_count: 7, bot_open_count: 2 });
    expect(stored!.first_open_at).toBeLessThanOrEqual(stored!.last_open_at!);
  });
});

describe('tracked links', () => {
  it('redirects (302) to the target and announces message.link_clicked once per link, at its first click by a person', async () => {
    // Prepare
    const { message, html } = await sendTracked({ links: true, domain_name: HOSTNAME, label: 'links' });
    const [first, second] = trackingPaths(html).links;

    // Act
    const scan = await hit(first!, { 'user-agent': 'Mozilla/5.0 (compatible; proofpoint-urldefense)' });
    const clicks = await Promise.all([hit(first!), hit(first!), hit(first!)]);
    const other = await hit(second!, { purpose: 'prefetch' });
    const otherByPerson = await hit(second!);

    // Assess
    for (const r of [scan, ...clicks]) {
      expect(r.status).toBe(302);
      expect(r.headers.get('location')).toBe('https://shop.example.com/item?id=7&ref=mail');
      expect(r.headers.get('cache-control')).toBe('no-store');
    }
    expect(other.headers.get('location')).toBe('http://docs.example.org/guide');
    expect(otherByPerson.status).toBe(302);
    const events = (await published(2)).sort((a, b) => a.data.object.link_data.length - b.data.object.link_data.length);
    expect(events.map((e) => e.type)).toEqual(['message.link_clicked', 'message.link_clicked']);
    expect(events[0].data.object).toMatchObject({
      message_id: message.id,
      label: 'links',
      sender_app_id: applicationId,
      link_data: [{ url: 'https://shop.example.com/item?id=7&ref=mail', count: 1 }],
      recents: [{ click_id: '0', link_index: '0', ip: expect.any(String), user_agent: expect.any(String) }],
    });
    expect(events[1].data.object.link_data).toEqual([
      { url: 'https://shop.example.com/item?id=7&ref=mail', count: 3 },
      { url: 'http://docs.example.org/guide', count: 1 },
    ]);
    expect(events[1].data.object.recents[0].link_index).toBe('1');
    const counted = await clickedLinksOf(alice.id as GrantId, message.id as MessageId);
    expect(counted).toMatchObject([
      { index: 0, click_count: 3, bot_click_count: 1 },
      { index: 1, click_count: 1, bot_click_count: 1 },
    ]);
  });

  it('refuses a forged or altered token with a 404 and no redirect, and counts nothing', async () => {
    // Prepare
    const { message, html } = await sendTracked({ opens: true, links: true, domain_name: HOSTNAME });
    const { links, pixel } = trackingPaths(html);
    const token = links[0]!.slice('/t/l/'.length);
    const [payload, signature] = token.split('.');
    const fields = JSON.parse(Buffer.from(payload!, 'base64url').toString('utf8'));
    const retargeted = Buffer.from(JSON.stringify({ ...fields, u: 'https://evil.example.net/' })).toString('base64url');
    const flipped = signature!.slice(0, -2) + (signature!.at(-2) === 'A' ? 'B' : 'A') + signature!.at(-1);
    const forged = [
      `/t/l/${retargeted}.${signature}`,
      `/t/l/${payload}.${flipped}`,
      `/t/l/${payload}`,
      `/t/l/${payload}.${signature}.x`,
      `/t/l/${pixel!.slice('/t/o/'.length)}`,
      `/t/o/${token}`,
      '/t/l/not-a-token',
    ];

    // Act
    const answers = await Promise.all(forged.map((path) => hit(path)));

    // Assess
    for (const r of answers) {
      expect(r.status).toBe(404);
      expect(r.headers.get('location')).toBeNull();
      const body = (await r.json()) as { error: { type: string; message: string } };
      expect(body.error.type).toBe('not_found_error');
      expect(body.error.message).toMatch(/tracking URL is not valid/);
    }
    expect(await clickedLinksOf(alice.id as GrantId, message.id as MessageId)).toEqual([]);
    expect((await getTrackedMessage(alice.id as GrantId, message.id as MessageId))!.open_count).toBeUndefined();
    // The sentinel: the real link still works and is the only thing announced.
    expect((await hit(links[0]!)).status).toBe(302);
    expect((await published(1)).map((e) => e.type)).toEqual(['message.link_clicked']);
  });
});

describe('thread.replied', () => {
  /** A reply from outside, as it arrives by SMTP (the same ingest as SES inbound). */
  const reply = (to: string, inReplyTo: string, id: string, extra = '') =>
    Buffer.from(
      [
        'From: Person <person@example.net>',
        `To: ${to}`,
        'Subject: Re: Tracked',
        `Message-ID: <${id}@example.net>`,
        `In-Reply-To: ${inReplyTo}`,
        `References: ${inReplyTo}`,
        'Date: Sat, 28 Nov 2026 20:00:00 +0000',
        ...(extra ? [extra] : []),
        'Content-Type: text/plain; charset=utf-8',
        '',
        'Thanks!',
        '',
      ].join('\r\n'),
    );

  it('announces a reply to a message whose thread replies are tracked, once per reply message', async () => {
    // Prepare
    const tracked = await sendTracked({ thread_replies: true, label: 'replies' });
    const untracked = await sendTracked({ opens: true, domain_name: HOSTNAME });
    const envelope = { mailFrom: 'person@example.net', recipients: [alice.email] };
    const id = `reply-${Date.now()}`;

    // Act
    const first = await ingestMessage(reply(alice.email, tracked.messageIdHeader, id), envelope);
    await ingestMessage(reply(alice.email, tracked.messageIdHeader, id), envelope); // the same reply again
    await ingestMessage(reply(alice.email, untracked.messageIdHeader, `${id}-u`), envelope);
    await ingestMessage(
      reply(alice.email, tracked.messageIdHeader, `${id}-ooo`, 'Auto-Submitted: auto-replied'),
      envelope,
    );
    const second = await ingestMessage(reply(alice.email, tracked.messageIdHeader, `${id}-2`), envelope);

    // Assess
    const events = await published(6);
    const replied = events
      .filter((e) => e.type === 'thread.replied')
      .sort((a, b) => a.data.object.reply_data.count - b.data.object.reply_data.count);
    expect(events.filter((e) => e.type === 'message.created')).toHaveLength(4);
    expect(replied).toHaveLength(2);
    const stored = (await api.get(`/v3/grants/${alice.id}/messages/${first.delivered[0]!.message_id}`)).body.data;
    expect(replied[0].data).toMatchObject({ application_id: applicationId, grant_id: alice.id });
    expect(replied[0].data.object).toEqual({
      message_id: first.delivered[0]!.message_id,
      root_message_id: tracked.message.id,
      thread_id: tracked.message.thread_id,
      label: 'replies',
      sender_app_id: applicationId,
      timestamp: expect.any(Number),
      reply_data: { count: 1 },
    });
    expect(stored.thread_id).toBe(tracked.message.thread_id);
    expect(replied[1].data.object).toMatchObject({
      message_id: second.delivered[0]!.message_id,
      reply_data: { count: 2 },
    });
  });
});
