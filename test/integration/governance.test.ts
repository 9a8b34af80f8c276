import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeAgentGrant, makeApplication, uniqueEmail } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { smtpClient, startInboundListener, sunkMessages } from '../support/mail';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue, drainQueue } from '../support/queues';

/**
 * Lists, rules and workspaces end to end: the endpoints, and the rules applied to real SMTP sessions
 * (the listener `npm start` runs, backed by the same ingest as SES inbound) and to sends.
 */
let gateway: Gateway;
let port: number;
let stopSmtp: () => Promise<void>;
let fanout: string;

beforeAll(async () => {
  fanout = await createTestQueue('governance-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
  gateway = await startGateway();
  ({ port, stop: stopSmtp } = await startInboundListener());
});

afterAll(async () => {
  await stopSmtp?.();
  await gateway?.close();
});

/** A fresh application (its own default workspace, lists and rules). */
async function newApp(): Promise<ApiClient> {
  return apiClient(gateway.url, (await makeApplication('governance')).apiKey);
}

async function createList(api: ApiClient, type: string, items: string[] = []) {
  const list = await api.post('/v3/lists', { name: `${type} list`, type });
  expect(list.status, list.text).toBe(201);
  if (items.length) expect((await api.post(`/v3/lists/${list.body.data.id}/items`, { items })).status).toBe(200);
  return list.body.data as { id: string };
}

async function attachRules(api: ApiClient, ruleIds: string[]) {
  const [workspace] = (await api.get('/v3/workspaces')).body.data;
  const patched = await api.patch(`/v3/workspaces/${workspace.workspace_id}`, { rule_ids: ruleIds });
  expect(patched.status, patched.text).toBe(200);
}

describe('lists', () => {
  it('creates, reads, renames and pages lists; the type cannot change', async () => {
    const api = await newApp();
    const created = await api.post('/v3/lists', { name: 'Blocked', description: 'Spam domains', type: 'domain' });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toMatchObject({
      object: 'list',
      name: 'Blocked',
      description: 'Spam domains',
      type: 'domain',
      items_count: 0,
    });
    const id = created.body.data.id;
    expect((await api.get(`/v3/lists/${id}`)).body.data.name).toBe('Blocked');
    expect((await api.put(`/v3/lists/${id}`, { name: 'Blocked domains' })).body.data.name).toBe('Blocked domains');
    const typeChange = await api.put(`/v3/lists/${id}`, { type: 'tld' });
    expect(typeChange.status).toBe(400);
    expect(typeChange.body.error.message).toContain("'type' cannot change");
    await api.post('/v3/lists', { name: 'Second', type: 'tld' });
    const first = await api.get('/v3/lists?limit=1');
    expect(first.body.data).toHaveLength(1);
    const second = await api.get(`/v3/lists?limit=1&page_token=${encodeURIComponent(first.body.next_cursor)}`);
    expect(second.body.data[0].id).not.toBe(first.body.data[0].id);
    expect((await (await newApp()).get(`/v3/lists/${id}`)).status).toBe(404);
    expect((await api.get('/v3/lists/lst_01jd6abcdefghjkmnpqrstvwxy')).status).toBe(404);
  });

  it('normalizes values, ignores duplicates, and refuses a request with any invalid value whole, naming each', async () => {
    const api = await newApp();
    const list = await createList(api, 'domain');
    const added = await api.post(`/v3/lists/${list.id}/items`, {
      items: ['  Spam.Example ', 'spam.example', 'bücher.example', 'other.example'],
    });
    expect(added.status, added.text).toBe(200);
    expect(added.body.data.items_count).toBe(3);
    const items = (await api.get(`/v3/lists/${list.id}/items`)).body.data.map((i: { value: string }) => i.value);
    expect(items.sort()).toEqual(['other.example', 'spam.example', 'xn--bcher-kva.example']);

    const bad = await api.post(`/v3/lists/${list.id}/items`, {
      items: ['fine.example', 'nodot', 'bad_label.example', 'x'.repeat(501)],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('items[1] "nodot"');
    expect(bad.body.error.message).toContain('items[2]');
    expect(bad.body.error.message).toContain('items[3]');
    expect(bad.body.error.message).toContain('500 characters');
    expect((await api.get(`/v3/lists/${list.id}`)).body.data.items_count).toBe(3);

    expect((await api.post(`/v3/lists/${list.id}/items`, { items: [] })).status).toBe(400);
    expect(
      (await api.post(`/v3/lists/${list.id}/items`, { items: Array.from({ length: 1001 }, (_, i) => `d${i}.example`) }))
        .status,
    ).toBe(400);
    const tld = await createList(api, 'tld');
    expect((await api.post(`/v3/lists/${tld.id}/items`, { items: ['.COM', 'xyz'] })).body.data.items_count).toBe(2);
    expect((await api.post(`/v3/lists/${tld.id}/items`, { items: ['co.uk'] })).status).toBe(400);
    const addresses = await createList(api, 'address');
    expect(
      (await api.post(`/v3/lists/${addresses.id}/items`, { items: ['Ann@Example.COM'] })).body.data.items_count,
    ).toBe(1);
    expect((await api.post(`/v3/lists/${addresses.id}/items`, { items: ['not-an-address'] })).status).toBe(400);

    const removed = await api.request('DELETE', `/v3/lists/${list.id}/items`, {
      body: { items: ['SPAM.example', 'absent.example'] },
    });
    expect(removed.status, removed.text).toBe(200);
    expect(removed.body.data.items_count).toBe(2);
  });

  it('keeps items_count exact under concurrent mixed adds and removes with duplicates', async () => {
    const api = await newApp();
    const list = await createList(api, 'domain');
    const values = Array.from({ length: 60 }, (_, i) => `v${i}.example`);
    await Promise.all([
      ...Array.from({ length: 6 }, (_, k) =>
        api.post(`/v3/lists/${list.id}/items`, { items: values.slice(k * 5, k * 5 + 40) }),
      ),
      ...Array.from({ length: 4 }, (_, k) =>
        api.request('DELETE', `/v3/lists/${list.id}/items`, { body: { items: values.slice(k * 10, k * 10 + 15) } }),
      ),
    ]);
    let stored: string[] = [];
    for (let token: string | undefined, first = true; first || token; first = false) {
      const page = await api.get(
        `/v3/lists/${list.id}/items?limit=200${token ? `&page_token=${encodeURIComponent(token)}` : ''}`,
      );
      stored = stored.concat(page.body.data.map((i: { value: string }) => i.value));
      token = page.body.next_cursor ?? undefined;
    }
    expect((await api.get(`/v3/lists/${list.id}`)).body.data.items_count).toBe(stored.length);
  });

  it('deletes a list of more than 1000 items: gone at once, its items removed in the background', async () => {
    const api = await newApp();
    const list = await createList(api, 'domain');
    for (let k = 0; k < 2; k++)
      await api.post(`/v3/lists/${list.id}/items`, {
        items: Array.from({ length: 1000 }, (_, i) => `n${k}-${i}.example`),
      });
    expect((await api.get(`/v3/lists/${list.id}`)).body.data.items_count).toBe(2000);
    const deleted = await api.delete(`/v3/lists/${list.id}`);
    expect(deleted.status, deleted.text).toBe(200);
    expect((await api.get(`/v3/lists/${list.id}`)).status).toBe(404);
    await jobsDone();
    const { storedValues } = await import('#shared/db/governance');
    expect((await storedValues(list.id as never, ['n0-0.example', 'n1-999.example'])).size).toBe(0);
  });
});

describe('rules and workspaces', () => {
  it('validates rules as the contract describes', async () => {
    const api = await newApp();
    const domains = await createList(api, 'domain');
    const tlds = await createList(api, 'tld');
    const base = { name: 'r', actions: [{ type: 'block' }] };
    const cases: [unknown, string][] = [
      [
        {
          ...base,
          trigger: 'inbound',
          match: { conditions: [{ field: 'recipient.domain', operator: 'is', value: 'x.com' }] },
        },
        'inbound rules match the sender only',
      ],
      [
        {
          ...base,
          match: {
            conditions: [{ field: 'from.domain', operator: 'in_list', value: ['lst_01jd6abcdefghjkmnpqrstvwxy'] }],
          },
        },
        'not found in this application',
      ],
      [
        { ...base, match: { conditions: [{ field: 'from.domain', operator: 'in_list', value: tlds.id }] } },
        'holds tld values',
      ],
      [
        {
          ...base,
          trigger: 'outbound',
          match: { conditions: [{ field: 'outbound.type', operator: 'contains', value: 'reply' }] },
        },
        'is and is_not only',
      ],
      [
        {
          ...base,
          actions: [{ type: 'assign_to_folder' }],
          match: { conditions: [{ field: 'from.tld', operator: 'is', value: 'com' }] },
        },
        "needs a 'value'",
      ],
      [
        { ...base, priority: 1001, match: { conditions: [{ field: 'from.tld', operator: 'is', value: 'com' }] } },
        'priority',
      ],
    ];
    for (const [body, fragment] of cases) {
      const response = await api.post('/v3/rules', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.message).toContain(fragment);
    }
    const otherApp = await newApp();
    const foreign = await createList(otherApp, 'domain');
    expect(
      (
        await api.post('/v3/rules', {
          ...base,
          match: { conditions: [{ field: 'from.domain', operator: 'in_list', value: foreign.id }] },
        })
      ).status,
    ).toBe(400);

    const rule = await api.post('/v3/rules', {
      ...base,
      match: { operator: 'any', conditions: [{ field: 'from.domain', operator: 'in_list', value: [domains.id] }] },
    });
    expect(rule.status, rule.text).toBe(201);
    expect(rule.body.data).toMatchObject({ object: 'rule', priority: 10, enabled: true, trigger: 'inbound' });
    const updated = await api.put(`/v3/rules/${rule.body.data.id}`, { priority: 1, enabled: false });
    expect(updated.body.data).toMatchObject({ priority: 1, enabled: false });
    expect((await otherApp.get(`/v3/rules/${rule.body.data.id}`)).status).toBe(404);
    expect((await api.get('/v3/rules')).body.data).toHaveLength(1);

    // Workspaces: the default one exists, cannot be deleted, and names rules of this application only.
    const [workspace] = (await api.get('/v3/workspaces')).body.data;
    expect(workspace).toMatchObject({ default: true, rule_ids: [] });
    expect((await api.delete(`/v3/workspaces/${workspace.workspace_id}`)).status).toBe(400);
    const foreignRule = await otherApp.post('/v3/rules', {
      ...base,
      match: { conditions: [{ field: 'from.tld', operator: 'is', value: 'com' }] },
    });
    expect(
      (await api.patch(`/v3/workspaces/${workspace.workspace_id}`, { rule_ids: [foreignRule.body.data.id] })).status,
    ).toBe(400);
    await attachRules(api, [rule.body.data.id]);
    expect((await api.delete(`/v3/rules/${rule.body.data.id}`)).status).toBe(200);
    expect((await api.get(`/v3/workspaces/${workspace.workspace_id}`)).body.data.rule_ids).toEqual([]);
  });

  it('puts new accounts of a domain in its auto-group workspace, or in the one named; manual-assign moves others', async () => {
    const api = await newApp();
    const grouped = await api.post('/v3/workspaces', { name: 'Acme', domain: 'acme-agents.test', auto_group: true });
    expect(grouped.status, grouped.text).toBe(201);
    const agent = await api.post('/v3/connect/custom', {
      provider: 'nylas',
      settings: { email: `bot-${Date.now()}@acme-agents.test` },
    });
    expect(agent.body.data.workspace_id).toBe(grouped.body.data.workspace_id);
    const named = await api.post('/v3/workspaces', { name: 'Named' });
    const other = await api.post('/v3/connect/custom', {
      provider: 'nylas',
      settings: { email: uniqueEmail() },
      workspace_id: named.body.data.workspace_id,
    });
    expect(other.status, other.text).toBe(201);
    expect(other.body.data.workspace_id).toBe(named.body.data.workspace_id);
    expect(
      (
        await api.post('/v3/connect/custom', {
          provider: 'nylas',
          settings: { email: uniqueEmail() },
          workspace_id: 'wsp_01jd6abcdefghjkmnpqrstvwxy',
        })
      ).status,
    ).toBe(400);
    const moved = await api.post(`/v3/workspaces/${grouped.body.data.workspace_id}/manual-assign`, {
      grant_ids: [other.body.data.id],
    });
    expect(moved.status, moved.text).toBe(200);
    expect((await api.get(`/v3/grants/${other.body.data.id}`)).body.data.workspace_id).toBe(
      grouped.body.data.workspace_id,
    );
  });
});

describe('enforcement', () => {
  it('refuses at RCPT TO mail whose envelope sender domain is in a blocked list, stores nothing, and records an smtp_rcpt evaluation', async () => {
    const api = await newApp();
    const list = await createList(api, 'domain', ['blocked-sender.example']);
    const rule = await api.post('/v3/rules', {
      name: 'Block spam',
      actions: [{ type: 'block' }],
      match: { conditions: [{ field: 'from.domain', operator: 'in_list', value: [list.id] }] },
    });
    await attachRules(api, [rule.body.data.id]);
    const agent = await makeAgentGrant(api);

    const refused = await smtpClient(port)
      .sendMail({ from: 'spammer@blocked-sender.example', to: agent.email, subject: 'Buy now', text: 'x' })
      .then(
        () => undefined,
        (error: { responseCode?: number; response?: string }) => error,
      );
    expect(refused?.responseCode).toBe(550);
    expect(refused?.response).toContain('5.7.1');
    expect((await api.get(`/v3/grants/${agent.id}/messages`)).body.data).toEqual([]);
    const [evaluation] = (await api.get(`/v3/grants/${agent.id}/rule-evaluations`)).body.data;
    expect(evaluation).toMatchObject({
      evaluation_stage: 'smtp_rcpt',
      message_id: null,
      evaluation_input: {
        from_address: 'spammer@blocked-sender.example',
        from_domain: 'blocked-sender.example',
        from_tld: 'example',
      },
      matched_rule_ids: [rule.body.data.id],
      applied_actions: { blocked: true },
    });

    // A list change takes effect for the very next message.
    await api.request('DELETE', `/v3/lists/${list.id}/items`, { body: { items: ['blocked-sender.example'] } });
    const accepted = await smtpClient(port).sendMail({
      from: 'spammer@blocked-sender.example',
      to: agent.email,
      subject: 'Allowed now',
      text: 'x',
    });
    expect(accepted.accepted).toEqual([agent.email]);
  });

  it('files mail by a TLD rule (assign_to_folder, mark_as_read) before it is stored: message.created shows it', async () => {
    const api = await newApp();
    const agent = await makeAgentGrant(api);
    const folder = await api.post(`/v3/grants/${agent.id}/folders`, { name: 'Promotions' });
    const tlds = await createList(api, 'tld', ['xyz']);
    const rule = await api.post('/v3/rules', {
      name: 'Promotions',
      actions: [{ type: 'assign_to_folder', value: 'Promotions' }, { type: 'mark_as_read' }],
      match: { conditions: [{ field: 'from.tld', operator: 'in_list', value: tlds.id }] },
    });
    await attachRules(api, [rule.body.data.id]);
    await drainQueue(fanout, 10, 500);

    await smtpClient(port).sendMail({ from: 'deals@shop.xyz', to: agent.email, subject: 'Sale', text: 'x' });
    await smtpClient(port).sendMail({ from: 'friend@example.org', to: agent.email, subject: 'Hi', text: 'x' });

    const messages = (await api.get(`/v3/grants/${agent.id}/messages`)).body.data as {
      subject: string;
      folders: string[];
      unread: boolean;
    }[];
    expect(messages.find((m) => m.subject === 'Sale')).toMatchObject({ folders: [folder.body.data.id], unread: false });
    expect(messages.find((m) => m.subject === 'Hi')).toMatchObject({ folders: ['inbox'], unread: true });
    const created = (await drainQueue(fanout, 2, 5000))
      .filter((e) => e.body.type === 'message.created')
      .map((e) => e.body.data.object);
    expect(created.find((o: { subject: string }) => o.subject === 'Sale')).toMatchObject({
      folders: [folder.body.data.id],
      unread: false,
    });
    const evaluations = (await api.get(`/v3/grants/${agent.id}/rule-evaluations`)).body.data;
    expect(evaluations.map((e: { evaluation_stage: string }) => e.evaluation_stage)).toEqual([
      'inbox_processing',
      'inbox_processing',
    ]);
    expect(evaluations.find((e: { matched_rule_ids: string[] }) => e.matched_rule_ids.length)).toMatchObject({
      applied_actions: { marked_as_read: true, folder_ids: [folder.body.data.id] },
    });
  });

  it('answers 403 naming the rule when an outbound rule blocks a recipient: nothing sent, nothing stored', async () => {
    const api = await newApp();
    const agent = await makeAgentGrant(api);
    const rule = await api.post('/v3/rules', {
      name: 'Only our company',
      trigger: 'outbound',
      actions: [{ type: 'block' }],
      match: { conditions: [{ field: 'recipient.domain', operator: 'is_not', value: 'ours.example' }] },
    });
    await attachRules(api, [rule.body.data.id]);
    const outside = `someone-${Date.now()}@elsewhere.example`;

    const blocked = await api.post(`/v3/grants/${agent.id}/messages/send`, {
      to: [{ email: outside }],
      subject: 'Leak',
    });
    expect(blocked.status, blocked.text).toBe(403);
    expect(blocked.body.error.message).toContain("'Only our company'");
    expect(await sunkMessages(outside)).toEqual([]);
    expect((await api.get(`/v3/grants/${agent.id}/messages`)).body.data).toEqual([]);
    const allowed = await api.post(`/v3/grants/${agent.id}/messages/send`, {
      to: [{ email: `colleague-${Date.now()}@ours.example` }],
      subject: 'Fine',
    });
    expect(allowed.status, allowed.text).toBe(200);
    const stages = (await api.get(`/v3/grants/${agent.id}/rule-evaluations`)).body.data.map(
      (e: { evaluation_stage: string; message_id: string | null }) => [e.evaluation_stage, e.message_id],
    );
    expect(stages).toEqual([
      ['outbound_send', allowed.body.data.id],
      ['outbound_send', null],
    ]);
  });
});

describe('more rules and workspaces', () => {
  it('applies mark_as_spam, mark_as_starred, archive and trash by sender, with is, contains and priorities', async () => {
    const api = await newApp();
    const agent = await makeAgentGrant(api);
    const rule = (name: string, priority: number, condition: object, actions: object[]) =>
      api
        .post('/v3/rules', { name, priority, match: { operator: 'any', conditions: [condition] }, actions })
        .then((r) => r.body.data.id as string);
    const ids = [
      await rule('spam', 1, { field: 'from.address', operator: 'is', value: 'Bad@Spam.example' }, [
        { type: 'mark_as_spam' },
      ]),
      await rule('star', 2, { field: 'from.domain', operator: 'contains', value: 'vip' }, [
        { type: 'mark_as_starred' },
        { type: 'archive' },
      ]),
      await rule('bin', 3, { field: 'from.tld', operator: 'is', value: 'test' }, [{ type: 'trash' }]),
    ];
    await attachRules(api, ids);
    for (const from of ['bad@spam.example', 'boss@vip-clients.example', 'noise@example.test']) {
      await smtpClient(port).sendMail({ from, to: agent.email, subject: from, text: 'x' });
    }
    const bySubject = Object.fromEntries(
      ((await api.get(`/v3/grants/${agent.id}/messages`)).body.data as { subject: string }[]).map((m) => [
        m.subject,
        m,
      ]),
    );
    expect(bySubject['bad@spam.example']).toMatchObject({ folders: ['spam'] });
    expect(bySubject['boss@vip-clients.example']).toMatchObject({ folders: ['archive'], starred: true });
    expect(bySubject['noise@example.test']).toMatchObject({ folders: ['trash'] });
  });

  it('matches outbound.type on sends (a reply is starred in Sent, a new message is not)', async () => {
    const api = await newApp();
    const agent = await makeAgentGrant(api);
    const rule = await api.post('/v3/rules', {
      name: 'Star replies',
      trigger: 'outbound',
      match: { conditions: [{ field: 'outbound.type', operator: 'is', value: 'reply' }] },
      actions: [{ type: 'mark_as_starred' }],
    });
    await attachRules(api, [rule.body.data.id]);
    const first = await api.post(`/v3/grants/${agent.id}/messages/send`, {
      to: [{ email: 'x@example.net' }],
      subject: 'New',
    });
    const reply = await api.post(`/v3/grants/${agent.id}/messages/send`, {
      to: [{ email: 'x@example.net' }],
      subject: 'Re: New',
      reply_to_message_id: first.body.data.id,
    });
    expect(first.body.data.starred).toBe(false);
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body.data.starred).toBe(true);
    expect((await api.get(`/v3/grants/${agent.id}/rule-evaluations`)).body.data[0].evaluation_input).toMatchObject({
      outbound_type: 'reply',
      recipient_domains: ['example.net'],
    });
  });

  it('decides SES inbound mail before storing it (no RCPT stage there): a blocked sender stores nothing', async () => {
    const api = await newApp();
    const list = await createList(api, 'address', ['blocked@ses-sender.example']);
    const rule = await api.post('/v3/rules', {
      name: 'Block one',
      actions: [{ type: 'block' }],
      match: { conditions: [{ field: 'from.address', operator: 'in_list', value: list.id }] },
    });
    await attachRules(api, [rule.body.data.id]);
    const agent = await makeAgentGrant(api);
    const { putBlob } = await import('#shared/aws/mail-bucket');
    const { handler } = await import('../../functions/inbound/handler');
    const sesId = `ses-${Date.now()}`;
    await putBlob(
      `inbound/${sesId}`,
      `From: blocked@ses-sender.example\r\nTo: ${agent.email}\r\nSubject: via SES\r\nMessage-ID: <${sesId}@x>\r\n\r\nhello\r\n`,
      'message/rfc822',
    );
    await handler({
      Records: [
        {
          ses: {
            mail: { messageId: sesId, source: 'blocked@ses-sender.example' },
            receipt: { recipients: [agent.email] },
          },
        },
      ],
    } as never);
    expect((await api.get(`/v3/grants/${agent.id}/messages`)).body.data).toEqual([]);
    expect((await api.get(`/v3/grants/${agent.id}/rule-evaluations`)).body.data[0]).toMatchObject({
      evaluation_stage: 'inbox_processing',
      message_id: null,
      applied_actions: { blocked: true },
    });
  });

  it('deletes a workspace that is not the default, groups existing accounts by domain, and lists rules and policies', async () => {
    const api = await newApp();
    const agent = await api.post('/v3/connect/custom', {
      provider: 'nylas',
      settings: { email: `later-${Date.now()}@grouped-later.test` },
    });
    expect(agent.body.data.workspace_id).toBeUndefined();
    const workspace = await api.post('/v3/workspaces', {
      name: 'Later',
      domain: 'grouped-later.test',
      auto_group: true,
    });
    const grouped = await api.post('/v3/workspaces/auto-group', {});
    expect(grouped.status, grouped.text).toBe(200);
    expect(grouped.body.data.assigned).toEqual([
      { grant_id: agent.body.data.id, workspace_id: workspace.body.data.workspace_id },
    ]);
    expect((await api.get('/v3/workspaces')).body.data).toHaveLength(2);
    expect((await api.delete(`/v3/workspaces/${workspace.body.data.workspace_id}`)).status).toBe(200);
    expect((await api.get(`/v3/workspaces/${workspace.body.data.workspace_id}`)).status).toBe(404);
    const rule = await api.post('/v3/rules', {
      name: 'r',
      match: { conditions: [{ field: 'from.tld', operator: 'is', value: 'com' }] },
      actions: [{ type: 'mark_as_read' }],
    });
    expect((await api.get(`/v3/rules/${rule.body.data.id}`)).body.data.name).toBe('r');
    await api.post('/v3/policies', { name: 'p1' });
    await api.post('/v3/policies', { name: 'p2' });
    const first = await api.get('/v3/policies?limit=1');
    expect(first.body.data).toHaveLength(1);
    expect(
      (await api.get(`/v3/policies?limit=1&page_token=${encodeURIComponent(first.body.next_cursor)}`)).body.data[0]
        .name,
    ).not.toBe(first.body.data[0].name);
  });
});

describe('policies', () => {
  it('creates, updates and deletes policies, refusing what this deployment cannot enforce', async () => {
    const api = await newApp();
    const created = await api.post('/v3/policies', {
      name: 'Standard',
      limits: { limit_count_daily_email_sent: 100, limit_attachment_count_limit: 5 },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.body.data).toMatchObject({
      object: 'policy',
      name: 'Standard',
      limits: { limit_count_daily_email_sent: 100 },
      rules: [],
      spam_detection: {},
    });
    const id = created.body.data.id;
    const cases: [unknown, string][] = [
      [{ name: 'x', spam_detection: { use_list_dnsbl: true } }, 'DNS blocklists need DNS'],
      [{ name: 'x', limits: { limit_storage_total: 1000 } }, 'storage totals are not enforced'],
      [{ name: 'x', limits: { limit_count_daily_email_sent: 0 } }, 'limit_count_daily_email_sent'],
      [{ name: 'x', rules: ['rul_01jd6abcdefghjkmnpqrstvwxy'] }, 'not found in this application'],
    ];
    for (const [body, fragment] of cases) {
      const response = await api.post('/v3/policies', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.error.message).toContain(fragment);
    }
    expect((await api.put(`/v3/policies/${id}`, { name: 'Renamed' })).body.data.name).toBe('Renamed');
    const other = await newApp();
    expect((await other.get(`/v3/policies/${id}`)).status).toBe(404);
    const [workspace] = (await other.get('/v3/workspaces')).body.data;
    expect((await other.patch(`/v3/workspaces/${workspace.workspace_id}`, { policy_id: id })).status).toBe(400);
    const [own] = (await api.get('/v3/workspaces')).body.data;
    expect((await api.patch(`/v3/workspaces/${own.workspace_id}`, { policy_id: id })).body.data.policy_id).toBe(id);
    expect((await api.delete(`/v3/policies/${id}`)).status).toBe(200);
    expect((await api.get(`/v3/workspaces/${own.workspace_id}`)).body.data.policy_id).toBeNull();
  });

  it("enforces the workspace policy's limits: sends per day, attachments, and messages received per day", async () => {
    const api = await newApp();
    const policy = await api.post('/v3/policies', {
      name: 'Tight',
      limits: {
        limit_count_daily_email_sent: 2,
        limit_attachment_count_limit: 1,
        limit_count_daily_message_received: 1,
      },
    });
    const [workspace] = (await api.get('/v3/workspaces')).body.data;
    await api.patch(`/v3/workspaces/${workspace.workspace_id}`, { policy_id: policy.body.data.id });
    const agent = await makeAgentGrant(api);
    const send = (extra: object = {}) =>
      api.post(`/v3/grants/${agent.id}/messages/send`, {
        to: [{ email: `p-${Date.now()}@example.net` }],
        subject: 'Limit',
        ...extra,
      });

    const twoFiles = await send({
      attachments: ['a', 'b'].map((n) => ({
        filename: `${n}.txt`,
        content_type: 'text/plain',
        content: Buffer.from(n).toString('base64'),
      })),
    });
    expect(twoFiles.status).toBe(400);
    expect(twoFiles.body.error.message).toContain('limit_attachment_count_limit');
    expect((await send()).status).toBe(200);
    expect((await send()).status).toBe(200);
    const third = await send();
    expect(third.status).toBe(429);
    expect(third.body.error.message).toContain('daily quota of 2 messages');

    expect(
      (await smtpClient(port).sendMail({ from: 'a@example.org', to: agent.email, subject: 'One', text: 'x' })).accepted,
    ).toEqual([agent.email]);
    const second = await smtpClient(port)
      .sendMail({ from: 'a@example.org', to: agent.email, subject: 'Two', text: 'x' })
      .then(
        () => undefined,
        (error: { responseCode?: number }) => error,
      );
    expect(second?.responseCode).toBe(452);
  });
});
