import { createHash, randomBytes, verify as verifySignature } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient, type ApiResponse } from '../support/api';
import { startDnsServer, type DnsServer } from '../support/dns-server';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { sunkMessages, sunkRaw, waitForSunk } from '../support/mail';
import { publishedBesidesDeliveries } from '../support/outbox-relay';
import { createTestQueue } from '../support/queues';
import { simpleParser } from 'mailparser';

/**
 * Transactional send (`POST /v3/domains/{domain_name}/messages/send`): from an address on one of the
 * application's verified domains, without a grant, through the mail transport Agent Accounts use
 * (here the local SMTP relay's sink), DKIM-signed with the domain's key.
 */
let dns: DnsServer;
let gateway: Gateway;

let fanout: string;

beforeAll(async () => {
  fanout = await createTestQueue('transactional-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
  dns = await startDnsServer();
  process.env.DNS_RESOLVERS = dns.address;
  gateway = await startGateway();
});

afterAll(async () => {
  await gateway?.close();
  await dns?.close();
});

function expectError(r: ApiResponse, status: number, type: string, fragment: string) {
  expect(r.status, r.text).toBe(status);
  expect(r.body.error.type).toBe(type);
  expect(r.body.error.message).toContain(fragment);
}

let seq = 0;
const uniqueDomain = () => `t${Date.now().toString(36)}${(seq++).toString(36)}.example.test`;
const uniqueRecipient = () => `someone+${Date.now().toString(36)}${(seq++).toString(36)}@outside.test`;

interface Setup {
  api: ApiClient;
  apiKey: string;
  domain: { id: string; domain_address: string };
  /** The `p=` of the DKIM record `info` says to publish. */
  dkimKey: string;
}

/** A fresh application with a domain; verified unless told otherwise (its ownership record served and checked). */
async function applicationWithDomain(verified = true): Promise<Setup> {
  const app = await makeApplication('Transactional');
  const api = apiClient(gateway.url, app.apiKey);
  const created = await api.post('/v3/admin/domains', { name: 'Mail', domain_address: uniqueDomain() });
  expect(created.status, created.text).toBe(200);
  const domain = created.body.data;
  const dkim = await api.post(`/v3/admin/domains/${domain.id}/info`, { type: 'dkim' });
  const dkimKey = /p=([A-Za-z0-9+/=]+)/.exec(dkim.body.data.attempt.options.value)![1]!;
  if (verified) {
    const ownership = await api.post(`/v3/admin/domains/${domain.id}/info`, { type: 'ownership' });
    dns.set(domain.domain_address, [{ type: 'TXT', value: ownership.body.data.attempt.options.value }]);
    const verify = await api.post(`/v3/admin/domains/${domain.id}/verify`, { type: 'ownership' });
    expect(verify.body.data.status, verify.text).toBe('done');
  }
  return { api, apiKey: app.apiKey, domain, dkimKey };
}

/**
 * Checks a DKIM-Signature (relaxed/relaxed, rsa-sha256, RFC 6376 §3.4.2 and §3.4.4) of `raw` against
 * `publicKey` (base64 DER, the record's p=): its body hash, then its signature over the signed headers.
 */
function checkDkim(raw: string, publicKey: string): Record<string, string> {
  const split = raw.indexOf('\r\n\r\n');
  const head = raw.slice(0, split);
  const body = raw.slice(split + 4);
  const headers: { name: string; line: string }[] = [];
  for (const line of head.split('\r\n')) {
    if (/^[ \t]/.test(line)) headers.at(-1)!.line += `\r\n${line}`;
    else headers.push({ name: line.slice(0, line.indexOf(':')).toLowerCase(), line });
  }
  const relaxed = (line: string) => {
    const at = line.indexOf(':');
    return `${line.slice(0, at).trim().toLowerCase()}:${line
      .slice(at + 1)
      .replace(/\r\n/g, '')
      .replace(/[ \t]+/g, ' ')
      .trim()}`;
  };
  const signature = headers.find((h) => h.name === 'dkim-signature')!;
  const tags = Object.fromEntries(
    signature.line
      .slice(signature.line.indexOf(':') + 1)
      .split(';')
      .map((t) => t.trim())
      .filter(Boolean)
      .map((t) => [t.slice(0, t.indexOf('=')), t.slice(t.indexOf('=') + 1).replace(/\s+/g, '')]),
  );
  const canonicalBody =
    body
      .split('\r\n')
      .map((l) => l.replace(/[ \t]+/g, ' ').replace(/ $/, ''))
      .join('\r\n')
      .replace(/(\r\n)+$/, '') + '\r\n';
  expect(createHash('sha256').update(canonicalBody).digest('base64'), 'body hash').toBe(tags.bh);
  const remaining = headers.filter((h) => h !== signature);
  const signed = tags.h!.split(':').map((name) => {
    const index = remaining.map((h) => h.name).lastIndexOf(name.toLowerCase());
    return index < 0 ? '' : `${relaxed(remaining.splice(index, 1)[0]!.line)}\r\n`;
  });
  const unsigned = relaxed(signature.line.replace(/(;\s*b=)[^;]*$/, '$1'));
  const key = { key: Buffer.from(publicKey, 'base64'), format: 'der' as const, type: 'spki' as const };
  expect(
    verifySignature('sha256', Buffer.from(signed.join('') + unsigned), key, Buffer.from(tags.b!, 'base64')),
    'DKIM signature',
  ).toBe(true);
  return tags;
}

describe('Function: domains-send', () => {
  it('sends from a verified domain through the relay, signed with the domain’s DKIM key', async () => {
    const { api, domain, dkimKey } = await applicationWithDomain();
    const to = uniqueRecipient();
    const from = { name: 'Receipts', email: `receipts@${domain.domain_address}` };
    const response = await api.post(`/v3/domains/${domain.domain_address}/messages/send`, {
      from,
      to: [{ email: to, name: 'Someone' }],
      subject: 'Your receipt',
      body: '<p>Thank you   for   your order.</p>',
      attachments: [
        { filename: 'receipt.txt', content_type: 'text/plain', content: Buffer.from('total: 12').toString('base64') },
      ],
      custom_headers: [{ name: 'X-Campaign', value: 'receipts' }],
      tracking_options: { opens: true, label: 'receipts' },
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toMatchObject({
      object: 'message',
      from: [from],
      to: [{ email: to, name: 'Someone' }],
      subject: 'Your receipt',
      snippet: 'Thank you for your order.',
      attachments: [{ filename: 'receipt.txt', content_type: 'text/plain', size: 9, is_inline: false }],
      tracking_options: { opens: true, links: false, label: 'receipts' },
    });
    expect(response.body.data.id).toMatch(/^msg_/);
    expect(response.body.data.message_id).toBe(response.body.data.id);

    const [sunk] = await waitForSunk(to);
    expect(sunk).toMatchObject({ mailFrom: from.email, recipients: [to], subject: 'Your receipt' });
    const raw = await sunkRaw(sunk!.id);
    expect(raw).toContain('X-Campaign: receipts');
    expect(raw).toContain(`@${domain.domain_address}>`);
    const tags = checkDkim(raw, dkimKey);
    expect(tags).toMatchObject({ d: domain.domain_address, s: 'switchboard', a: 'rsa-sha256' });
    // The signature is for this domain's key only: another domain's key does not verify it.
    const other = await applicationWithDomain(false);
    expect(() => checkDkim(raw, other.dkimKey)).toThrow(/DKIM signature/);
  });

  it('tracks opens and links of what it sends (under the application: no grant), announced once each', async () => {
    // Prepare
    const { api, domain } = await applicationWithDomain();
    const to = uniqueRecipient();
    await publishedBesidesDeliveries(fanout);

    // Act: the send, then two opens and a click of what arrived
    const response = await api.post(`/v3/domains/${domain.domain_address}/messages/send`, {
      from: { email: `news@${domain.domain_address}` },
      to: [{ email: to }],
      subject: 'Spring news',
      body: '<html><body><p>Read <a href="https://news.example.com/spring">the news</a></p></body></html>',
      tracking_options: { opens: true, links: true, label: 'spring', domain_name: 'links.example.com' },
    });
    expect(response.status, response.text).toBe(200);
    const id = response.body.data.id as string;
    const html = String((await simpleParser(await sunkRaw((await waitForSunk(to))[0]!.id))).html);
    const pixel = /<img src="https:\/\/links\.example\.com(\/t\/o\/[^"]+)"/.exec(html)?.[1];
    const link = /href="https:\/\/links\.example\.com(\/t\/l\/[^"]+)"/.exec(html)?.[1];
    expect(pixel).toBeDefined();
    expect(link).toBeDefined();
    const hit = (path: string) =>
      fetch(gateway.url + path, { redirect: 'manual', headers: { 'user-agent': 'Mozilla/5.0 Thunderbird/128.0' } });
    const opens = [await hit(pixel!), await hit(pixel!)];
    const click = await hit(link!);

    // Assess
    for (const open of opens) expect(open.status).toBe(200);
    expect(click.status).toBe(302);
    expect(click.headers.get('location')).toBe('https://news.example.com/spring');
    // Besides the relay's answer (message.transactional.delivered).
    const events = (await publishedBesidesDeliveries(fanout)).filter(
      (e) => !e.type.startsWith('message.transactional.'),
    );
    expect(events.map((e) => e.type)).toEqual(['message.link_clicked', 'message.opened']);
    for (const event of events) {
      expect(event.data.grant_id).toBeNull();
      expect(event.data.object).toMatchObject({ message_id: id, label: 'spring' });
    }
  });

  it('takes an attachment past the JSON limit as multipart/form-data, as grant sends do', async () => {
    const { apiKey, domain } = await applicationWithDomain();
    const to = uniqueRecipient();
    const content = randomBytes(3.5 * 1024 * 1024);
    const form = new FormData();
    form.append(
      'message',
      JSON.stringify({ from: { email: `files@${domain.domain_address}` }, to: [{ email: to }], subject: 'Big file' }),
    );
    form.append('file', new Blob([content], { type: 'application/octet-stream' }), 'big.bin');
    const response = await fetch(`${gateway.url}/v3/domains/${domain.domain_address}/messages/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}` },
      body: form,
    });
    const text = await response.text();
    expect(response.status, text).toBe(200);
    expect(JSON.parse(text).data.attachments).toEqual([
      {
        filename: 'big.bin',
        content_type: 'application/octet-stream',
        size: content.length,
        is_inline: false,
        content_disposition: 'attachment',
      },
    ]);
    const [sunk] = await waitForSunk(to);
    expect(sunk!.size).toBeGreaterThan(content.length);
  });

  it('renders an application template, the explicit subject winning over the template’s', async () => {
    const { api, domain } = await applicationWithDomain();
    const template = await api.post('/v3/templates', {
      name: 'Welcome',
      engine: 'mustache',
      subject: 'Welcome {{name}}',
      body: '<p>Hello {{name}}</p>',
    });
    expect(template.status, template.text).toBe(200);
    const to = uniqueRecipient();
    const send = (body: Record<string, unknown>) =>
      api.post(`/v3/domains/${domain.domain_address}/messages/send`, {
        from: { email: `hello@${domain.domain_address}` },
        to: [{ email: to }],
        template: { id: template.body.data.id, variables: { name: 'Ada' } },
        ...body,
      });
    const rendered = await send({});
    expect(rendered.status, rendered.text).toBe(200);
    expect(rendered.body.data).toMatchObject({ subject: 'Welcome Ada', body: '<p>Hello Ada</p>' });
    // `from` as a list of one address, as the official SDK sends it.
    const overridden = await send({
      subject: 'Hi',
      from: [{ email: `hello@${domain.domain_address}`, name: 'Hello' }],
    });
    expect(overridden.status, overridden.text).toBe(200);
    expect(overridden.body.data).toMatchObject({
      subject: 'Hi',
      body: '<p>Hello Ada</p>',
      from: [{ email: `hello@${domain.domain_address}`, name: 'Hello' }],
    });
  });

  it('sends once per Idempotency-Key: the same request again replays the answer, another request is 409', async () => {
    const { api, domain } = await applicationWithDomain();
    const to = uniqueRecipient();
    const request = {
      from: { email: `orders@${domain.domain_address}` },
      to: [{ email: to }],
      subject: 'Order 7',
      body: '<p>Shipped</p>',
    };
    const path = `/v3/domains/${domain.domain_address}/messages/send`;
    const key = { 'idempotency-key': `order-7-${seq++}` };

    const first = await api.post(path, request, key);
    const again = await api.post(path, request, key);
    const other = await api.post(path, { ...request, subject: 'Order 8' }, key);
    // Another application's key of the same name is its own.
    const elsewhere = await applicationWithDomain();
    const theirs = await elsewhere.api.post(
      `/v3/domains/${elsewhere.domain.domain_address}/messages/send`,
      { ...request, from: { email: `orders@${elsewhere.domain.domain_address}` } },
      key,
    );

    expect(first.status, first.text).toBe(200);
    expect(first.headers.get('idempotent-response')).toBeNull();
    expect(again.status, again.text).toBe(200);
    expect(again.headers.get('idempotent-response')).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expectError(other, 409, 'conflict_error', 'Idempotency-Key was already used with a different request');
    expect(theirs.status, theirs.text).toBe(200);
    expect(theirs.body.data.id).not.toBe(first.body.data.id);
    // One message left for this application's key, one for the other application's.
    await waitForSunk(to);
    await expect.poll(async () => (await sunkMessages(to)).length).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await sunkMessages(to)).toHaveLength(2);
  });

  it('refuses an unknown, unverified or foreign domain, and a sender off the domain, sending nothing', async () => {
    const verified = await applicationWithDomain();
    const unverified = await applicationWithDomain(false);
    const to = uniqueRecipient();
    const send = (api: ApiClient, domainName: string, from = `a@${domainName}`) =>
      api.post(`/v3/domains/${domainName}/messages/send`, { from: { email: from }, to: [{ email: to }], subject: 'x' });

    expectError(
      await send(unverified.api, unverified.domain.domain_address),
      400,
      'invalid_request_error',
      `The domain ${unverified.domain.domain_address} (${unverified.domain.id}) is not verified`,
    );
    const unknown = uniqueDomain();
    expectError(
      await send(verified.api, unknown),
      404,
      'not_found_error',
      `The domain ${unknown} is not registered by this application`,
    );
    // Another application's verified domain is not this one's.
    expectError(
      await send(unverified.api, verified.domain.domain_address),
      404,
      'not_found_error',
      `The domain ${verified.domain.domain_address} is not registered by this application`,
    );
    expectError(
      await send(verified.api, verified.domain.domain_address, 'a@elsewhere.test'),
      400,
      'invalid_request_error',
      `'from.email' must be an address on ${verified.domain.domain_address}`,
    );
    expectError(
      await verified.api.post(`/v3/domains/${verified.domain.domain_address}/messages/send`, {
        from: { email: `a@${verified.domain.domain_address}` },
        to: [],
      }),
      400,
      'invalid_request_error',
      "at least one recipient in 'to', 'cc' or 'bcc'",
    );
    expectError(
      await verified.api.post(`/v3/domains/${verified.domain.domain_address}/messages/send`, { to: [{ email: to }] }),
      400,
      'invalid_request_error',
      'from',
    );
    expectError(
      await verified.api.post(`/v3/domains/${verified.domain.domain_address}/messages/send`, {
        from: { email: `a@${verified.domain.domain_address}` },
        to: [{ email: to }],
        reply_to_message_id: 'msg_123',
      }),
      400,
      'invalid_request_error',
      "'reply_to_message_id' must be the Message-ID header",
    );
    // Sentinel: a send that is accepted afterwards is the only one the relay got.
    const accepted = await send(verified.api, verified.domain.domain_address);
    expect(accepted.status, accepted.text).toBe(200);
    expect(await waitForSunk(to)).toHaveLength(1);
  });
});
