import { beforeAll, describe, expect, it } from 'vitest';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue, drainQueue } from '../support/queues';

/**
 * Contacts of Agent Accounts over HTTP: the address book (CRUD, groups, every list filter, paging,
 * notifications, tenant scoping, bad input) and the contacts collected from mail after an exchange.
 */
let fanout: string;
beforeAll(async () => {
  fanout = await createTestQueue('contacts-fanout');
  process.env.FANOUT_QUEUE_URL = fanout;
});
const { api, otherApi } = useApi();

type ContactView = {
  id: string;
  source: string;
  given_name?: string;
  surname?: string;
  emails: { email: string }[];
  groups: { id: string }[];
};
const ids = (data: { id: string }[]) => data.map((c) => c.id);

describe('contacts of an Agent Account', () => {
  it('creates, reads, changes and deletes a contact, with contact.updated and contact.deleted, scoped to its application', async () => {
    const agent = await makeAgentGrant(api);
    await drainQueue(fanout, 5, 500);
    const body = {
      given_name: 'Ann',
      middle_name: 'B.',
      surname: 'Lee',
      nickname: 'Annie',
      birthday: '1990-04-01',
      company_name: 'Example Inc.',
      job_title: 'Engineer',
      manager_name: 'Bill',
      office_location: 'Berlin',
      notes: 'Likes ramen',
      picture_url: 'https://example.com/ann.png',
      emails: [{ email: 'Ann.Lee@Example.com', type: 'work' }],
      phone_numbers: [{ number: '+1 (555) 010-0200', type: 'mobile' }],
      physical_addresses: [
        { type: 'work', street_address: '1 Main St', city: 'Springfield', postal_code: '12345', country: 'US' },
      ],
      im_addresses: [{ im_address: 'ann@xmpp.example.com', type: 'jabber' }],
      web_pages: [{ url: 'https://ann.example.com', type: 'home' }],
    };
    const created = await api.post(`/v3/grants/${agent.id}/contacts`, body);
    expect(created.status, created.text).toBe(200);
    const contact = created.body.data;
    expect(contact).toMatchObject({
      ...body,
      object: 'contact',
      grant_id: agent.id,
      source: 'address_book',
      groups: [],
    });
    expect(contact.id).toMatch(/^ctc_/);

    const got = await api.get(`/v3/grants/${agent.id}/contacts/${contact.id}`);
    expect(got.body.data).toEqual(contact);
    expect((await api.get(`/v3/grants/${agent.id}/contacts/${contact.id}?select=id,given_name`)).body.data).toEqual({
      id: contact.id,
      given_name: 'Ann',
    });

    // PUT replaces what it names and keeps the rest; an empty string clears a field.
    const changed = await api.put(`/v3/grants/${agent.id}/contacts/${contact.id}`, {
      surname: 'Lee-Smith',
      notes: '',
      phone_numbers: [],
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.body.data).toMatchObject({
      given_name: 'Ann',
      surname: 'Lee-Smith',
      phone_numbers: [],
      emails: body.emails,
    });
    expect(changed.body.data.notes).toBeUndefined();
    expect(changed.body.data.updated_at).toBeGreaterThanOrEqual(contact.updated_at);

    // Another application sees none of it.
    const other = await otherApi();
    expect((await other.get(`/v3/grants/${agent.id}/contacts/${contact.id}`)).status).toBe(404);
    expect((await other.delete(`/v3/grants/${agent.id}/contacts/${contact.id}`)).status).toBe(404);

    const removed = await api.delete(`/v3/grants/${agent.id}/contacts/${contact.id}`);
    expect(removed.status).toBe(200);
    expect(removed.body.request_id).toBe(removed.headers.get('x-request-id'));
    const gone = await api.get(`/v3/grants/${agent.id}/contacts/${contact.id}`);
    expect(gone.status).toBe(404);
    expect(gone.body.error).toMatchObject({ type: 'not_found_error' });
    expect((await api.delete(`/v3/grants/${agent.id}/contacts/${contact.id}`)).status).toBe(404);

    const events = await drainQueue(fanout, 3, 10_000);
    expect(events.map((e) => [e.body.type, e.body.data.object.id])).toEqual([
      ['contact.updated', contact.id],
      ['contact.updated', contact.id],
      ['contact.deleted', contact.id],
    ]);
    expect(events[1]!.body.data.object.surname).toBe('Lee-Smith');
  });

  it('keeps groups nested by path; filters by group (recurse for subgroups); a deleted group leaves its contacts', async () => {
    const agent = await makeAgentGrant(api);
    const group = async (name: string, parent?: string) => {
      const response = await api.post(`/v3/grants/${agent.id}/contacts/groups`, {
        name,
        ...(parent ? { parent_id: parent } : {}),
      });
      expect(response.status, response.text).toBe(200);
      return response.body.data as { id: string; path: string; name: string };
    };
    const team = await group('Team');
    const backend = await group('Backend', team.id);
    expect(backend).toMatchObject({
      object: 'contact_group',
      grant_id: agent.id,
      name: 'Backend',
      path: 'Team/Backend',
      group_type: 'user',
    });
    expect((await api.post(`/v3/grants/${agent.id}/contacts/groups`, { name: 'team' })).status).toBe(409);
    expect((await api.post(`/v3/grants/${agent.id}/contacts/groups`, { name: 'a/b' })).status).toBe(400);
    const missingParent = await api.post(`/v3/grants/${agent.id}/contacts/groups`, {
      name: 'X',
      parent_id: 'ctg_01jd6abcdefghjkmnpqrstvwxy',
    });
    expect(missingParent.status).toBe(400);
    expect(missingParent.body.error.message).toContain('does not exist');

    const make = async (given_name: string, groups: string[]) =>
      (await api.post(`/v3/grants/${agent.id}/contacts`, { given_name, groups: groups.map((id) => ({ id })) })).body
        .data as ContactView;
    const lead = await make('Lead', [team.id]);
    const dev = await make('Dev', [backend.id]);
    const outsider = await make('Outsider', []);
    const inTeam = await api.get(`/v3/grants/${agent.id}/contacts?group=${team.id}`);
    expect(ids(inTeam.body.data)).toEqual([lead.id]);
    expect(ids((await api.get(`/v3/grants/${agent.id}/contacts?group=${team.id}&recurse=true`)).body.data)).toEqual([
      lead.id,
      dev.id,
    ]);
    expect((await api.get(`/v3/grants/${agent.id}/contacts?group=ctg_01jd6abcdefghjkmnpqrstvwxy`)).status).toBe(404);

    const bad = await api.post(`/v3/grants/${agent.id}/contacts`, {
      given_name: 'X',
      groups: [{ id: 'ctg_01jd6abcdefghjkmnpqrstvwxy' }],
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain("Contact group 'ctg_01jd6abcdefghjkmnpqrstvwxy' does not exist");

    // Renaming the parent renames the child's path.
    const renamed = await api.put(`/v3/grants/${agent.id}/contacts/groups/${team.id}`, { name: 'Crew' });
    expect(renamed.body.data).toMatchObject({ name: 'Crew', path: 'Crew' });
    const groups = (await api.get(`/v3/grants/${agent.id}/contacts/groups`)).body.data as {
      id: string;
      path: string;
    }[];
    expect(groups.map((g) => g.path)).toEqual(['Crew', 'Crew/Backend']);

    const parentDelete = await api.delete(`/v3/grants/${agent.id}/contacts/groups/${team.id}`);
    expect(parentDelete.status).toBe(400);
    expect(parentDelete.body.error.message).toContain('subgroup');
    expect((await api.delete(`/v3/grants/${agent.id}/contacts/groups/${backend.id}`)).status).toBe(200);
    expect((await api.get(`/v3/grants/${agent.id}/contacts/${dev.id}`)).body.data.groups).toEqual([]);
    expect((await api.get(`/v3/grants/${agent.id}/contacts/${outsider.id}`)).body.data.groups).toEqual([]);
    expect((await api.get(`/v3/grants/${agent.id}/contacts/${lead.id}`)).body.data.groups).toEqual([{ id: team.id }]);
  });

  it('filters by email and phone number, pages through filtered results, and refuses a foreign page token', async () => {
    const agent = await makeAgentGrant(api);
    const made: ContactView[] = [];
    for (let i = 0; i < 7; i++) {
      const response = await api.post(`/v3/grants/${agent.id}/contacts`, {
        given_name: `P${i}`,
        emails: [{ email: i % 2 ? `odd${i}@example.com` : 'shared@example.com' }],
        phone_numbers: [{ number: `+49 30 1234 56${i}` }],
      });
      made.push(response.body.data);
    }
    const shared = made.filter((_, i) => i % 2 === 0).map((c) => c.id);
    expect(ids((await api.get(`/v3/grants/${agent.id}/contacts?email=SHARED@example.com`)).body.data)).toEqual(shared);
    expect(
      ids(
        (await api.get(`/v3/grants/${agent.id}/contacts?phone_number=${encodeURIComponent('030 1234-563')}`)).body.data,
      ),
    ).toEqual([made[3]!.id]);
    expect(
      ids(
        (await api.get(`/v3/grants/${agent.id}/contacts?phone_number=${encodeURIComponent('+4930123456 3')}`)).body
          .data,
      ),
    ).toEqual([made[3]!.id]);

    const seen: string[] = [];
    let token: string | undefined;
    do {
      const page = await api.get(
        `/v3/grants/${agent.id}/contacts?email=shared@example.com&limit=3${token ? `&page_token=${token}` : ''}`,
      );
      expect(page.status, page.text).toBe(200);
      expect(page.body.data.length).toBeLessThanOrEqual(3);
      seen.push(...ids(page.body.data));
      token = page.body.next_cursor;
    } while (token);
    expect(seen).toEqual(shared);

    const first = await api.get(`/v3/grants/${agent.id}/contacts?limit=2`);
    const elsewhere = await makeAgentGrant(api);
    const foreign = await api.get(`/v3/grants/${elsewhere.id}/contacts?page_token=${first.body.next_cursor}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.message).toContain('page_token');
    expect((await api.get(`/v3/grants/${agent.id}/contacts?source=domain`)).body.data).toEqual([]);
    expect((await api.get(`/v3/grants/${agent.id}/contacts?source=inbox`)).body.data).toEqual([]);
  });

  it.each([
    [{}, 'needs a name'],
    [{ notes: 'only notes' }, 'needs a name'],
    [{ given_name: 'X', emails: [{ email: 'not an address' }] }, 'emails'],
    [{ given_name: 'X', emails: [{ email: 'a@b.c', type: 'pager' }] }, 'type'],
    [{ given_name: 'X', birthday: 'April 1st' }, 'birthday'],
    [{ given_name: 'X', groups: [{ id: 'team' }] }, 'not a contact group ID'],
    [{ given_name: 'X', favourite: true }, 'favourite'],
  ])('refuses %j with a 400 naming the problem', async (body, words) => {
    const agent = await makeAgentGrant(api);
    const response = await api.post(`/v3/grants/${agent.id}/contacts`, body);
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.type).toBe('invalid_request_error');
    expect(response.body.error.message).toContain(words);
    expect((await api.get(`/v3/grants/${agent.id}/contacts`)).body.data).toEqual([]);
  });

  it('refuses list parameters it does not know and IDs of another kind', async () => {
    const agent = await makeAgentGrant(api);
    expect((await api.get(`/v3/grants/${agent.id}/contacts?source=everywhere`)).status).toBe(400);
    expect((await api.get(`/v3/grants/${agent.id}/contacts?colour=red`)).status).toBe(400);
    expect((await api.get(`/v3/grants/${agent.id}/contacts/msg_01jd6abcdefghjkmnpqrstvwxy`)).status).toBe(404);
    expect(
      (await api.put(`/v3/grants/${agent.id}/contacts/ctc_01jd6abcdefghjkmnpqrstvwxy`, { given_name: 'X' })).status,
    ).toBe(404);
    expect(
      (await api.put(`/v3/grants/${agent.id}/contacts/groups/ctg_01jd6abcdefghjkmnpqrstvwxy`, { name: 'X' })).status,
    ).toBe(404);
  });
});

describe('contacts collected from mail (source=inbox)', () => {
  it('collects the people an account writes to and hears from, one contact per address, renamed as names change', async () => {
    const ann = await makeAgentGrant(api);
    const bob = await makeAgentGrant(api);
    const send = async (from: string, body: object) => {
      const response = await api.post(`/v3/grants/${from}/messages/send`, {
        subject: 'Hello',
        body: '<p>Hi</p>',
        ...body,
      });
      expect(response.status, response.text).toBe(200);
    };
    await send(ann.id, {
      to: [{ email: bob.email, name: 'Bob Stone' }],
      cc: [{ email: 'Carol.King@Example.net', name: 'Carol King' }],
    });
    await send(bob.id, {
      to: [{ email: ann.email, name: 'Ann' }],
      reply_to: [{ email: 'bob-desk@example.org', name: 'Bob Desk' }],
    });
    await send(ann.id, {
      to: [{ email: 'carol.king@example.net', name: 'King, Carol' }, { email: 'no-reply@example.net' }],
    });
    await jobsDone();

    const collected = async (grant: string) =>
      ((await api.get(`/v3/grants/${grant}/contacts?source=inbox`)).body.data as ContactView[])
        .map((c) => [c.emails[0]!.email, c.given_name, c.surname, c.source])
        .sort();
    // Ann wrote to Bob and Carol (twice: one contact, named as last seen) and heard from Bob; machines are left out.
    expect(await collected(ann.id)).toEqual([
      [bob.email.toLowerCase(), 'Bob', 'Stone', 'inbox'],
      ['bob-desk@example.org', 'Bob', 'Desk', 'inbox'],
      ['carol.king@example.net', 'Carol', 'King', 'inbox'],
    ]);
    // Bob heard from Ann (no display name on her side) and wrote to her.
    expect((await collected(bob.id)).map((c) => c[0])).toEqual([ann.email.toLowerCase()]);
    // The address book is untouched; an inbox contact is found by address, read and deleted, not changed.
    expect((await api.get(`/v3/grants/${ann.id}/contacts`)).body.data).toEqual([]);
    const carol = (await api.get(`/v3/grants/${ann.id}/contacts?source=inbox&email=CAROL.KING@example.net`)).body
      .data as ContactView[];
    expect(carol).toHaveLength(1);
    expect((await api.get(`/v3/grants/${ann.id}/contacts/${carol[0]!.id}`)).body.data.source).toBe('inbox');
    const change = await api.put(`/v3/grants/${ann.id}/contacts/${carol[0]!.id}`, { given_name: 'C' });
    expect(change.status).toBe(400);
    expect(change.body.error.message).toContain('collected from mail');
    expect((await api.delete(`/v3/grants/${ann.id}/contacts/${carol[0]!.id}`)).status).toBe(200);
    expect(
      (await api.get(`/v3/grants/${ann.id}/contacts?source=inbox&email=carol.king@example.net`)).body.data,
    ).toEqual([]);
  });
});
