import { describe, expect, it } from 'vitest';
import { makeAgentGrant, uniqueEmail } from '../support/factories';
import { useApi } from '../support/harness';
import { waitForSunk } from '../support/mail';
import { jobsDone } from '../support/outbox-relay';

const { api } = useApi();

describe('smoke', () => {
  it('sends from A to B and to an outside address', async () => {
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const outside = uniqueEmail('outside').replace('agents.test', 'example.net');
    const sent = await api.post(`/v3/grants/${a.id}/messages/send`, {
      to: [{ email: b.email }, { email: outside }],
      subject: 'Hello B',
      body: '<p>Hi there</p>',
    });
    expect(sent.status, sent.text).toBe(200);
    await jobsDone();
    const inbox = await api.get(`/v3/grants/${b.id}/messages?in=inbox`);
    expect(inbox.status, inbox.text).toBe(200);
    expect(inbox.body.data.map((m: { subject: string }) => m.subject)).toEqual(['Hello B']);
    const sentList = await api.get(`/v3/grants/${a.id}/messages?in=sent`);
    expect(sentList.body.data).toHaveLength(1);
    expect((await waitForSunk(outside)).length).toBe(1);
    const folders = await api.get(`/v3/grants/${b.id}/folders`);
    expect(folders.body.data.find((f: { id: string }) => f.id === 'inbox')).toMatchObject({
      total_count: 1,
      unread_count: 1,
    });
    const threads = await api.get(`/v3/grants/${b.id}/threads`);
    expect(threads.status, threads.text).toBe(200);
    expect(threads.body.data).toHaveLength(1);
  });
});
