import { describe, expect, it } from 'vitest';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { jobsDone } from '../support/outbox-relay';

const { api, otherApi } = useApi();

type Grant = Awaited<ReturnType<typeof makeAgentGrant>>;
interface Folder {
  id: string;
  name: string;
  parent_id?: string;
  system_folder: boolean;
  total_count: number;
  unread_count: number;
  child_count: number;
  [key: string]: unknown;
}

const SYSTEM_IDS = ['inbox', 'sent', 'drafts', 'trash', 'spam', 'archive'];

const foldersPath = (grant: Grant, suffix = '') => `/v3/grants/${grant.id}/folders${suffix}`;

async function createFolder(grant: Grant, body: Record<string, unknown>): Promise<Folder> {
  const response = await api.post(foldersPath(grant), body);
  expect(response.status, response.text).toBe(200);
  return response.body.data as Folder;
}

async function listAll(grant: Grant, query = ''): Promise<Folder[]> {
  const response = await api.get(foldersPath(grant, query));
  expect(response.status, response.text).toBe(200);
  return response.body.data as Folder[];
}

async function getFolder(grant: Grant, folderId: string): Promise<Folder> {
  const response = await api.get(foldersPath(grant, `/${folderId}`));
  expect(response.status, response.text).toBe(200);
  return response.body.data as Folder;
}

const counts = (f: Folder) => ({ id: f.id, total_count: f.total_count, unread_count: f.unread_count });

async function folderCounts(grant: Grant, ids: string[]) {
  const all = await listAll(grant);
  return ids.map((id) => {
    const folder = all.find((f) => f.id === id);
    return folder ? counts(folder) : { id, missing: true };
  });
}

/** Sends from one Agent Account to another and returns the copy that landed in the recipient's inbox. */
async function deliver(from: Grant, to: Grant, subject: string) {
  const sent = await api.post(`/v3/grants/${from.id}/messages/send`, {
    to: [{ email: to.email }],
    subject,
    body: `<p>${subject}</p>`,
  });
  expect(sent.status, sent.text).toBe(200);
  await jobsDone();
  const inbox = await api.get(`/v3/grants/${to.id}/messages?in=inbox&subject=${encodeURIComponent(subject)}`);
  expect(inbox.status, inbox.text).toBe(200);
  expect(inbox.body.data).toHaveLength(1);
  return {
    sent: sent.body.data as { id: string },
    received: inbox.body.data[0] as { id: string; folders: string[]; unread: boolean },
  };
}

describe('GET /v3/grants/{grant_id}/folders', () => {
  it('lists exactly the six system folders of a new Agent Account, in order, with zero counts', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);

    // Act
    const response = await api.get(foldersPath(grant));

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body.request_id).toMatch(/^req_/);
    expect(response.body).not.toHaveProperty('next_cursor');
    const base = {
      object: 'folder',
      grant_id: grant.id,
      system_folder: true,
      total_count: 0,
      unread_count: 0,
      child_count: 0,
    };
    expect(response.body.data).toEqual([
      { ...base, id: 'inbox', name: 'Inbox', attributes: ['\\Inbox'] },
      { ...base, id: 'sent', name: 'Sent', attributes: ['\\Sent'] },
      { ...base, id: 'drafts', name: 'Drafts', attributes: ['\\Drafts'] },
      { ...base, id: 'trash', name: 'Trash', attributes: ['\\Trash'] },
      { ...base, id: 'spam', name: 'Spam', attributes: ['\\Junk'] },
      { ...base, id: 'archive', name: 'Archive', attributes: ['\\Archive'] },
    ]);
  });

  it('pages through system and custom folders with limit and page_token, none missing and none repeated', async () => {
    // Prepare: 6 system + 7 custom folders (one nested) = 13 folders
    const grant = await makeAgentGrant(api);
    const names = ['Gamma', 'alpha', 'Delta', 'beta', 'Epsilon', 'zeta'];
    const created: Folder[] = [];
    for (const name of names) created.push(await createFolder(grant, { name }));
    created.push(await createFolder(grant, { name: 'Nested', parent_id: created[0]!.id }));
    // System folders first, then custom ones by name, case-insensitively.
    const byName = new Map(created.map((f) => [f.name, f.id]));
    const expected = [
      ...SYSTEM_IDS,
      ...['alpha', 'beta', 'Delta', 'Epsilon', 'Gamma', 'Nested', 'zeta'].map((name) => byName.get(name)!),
    ];

    // Act
    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const response = await api.get(
        foldersPath(grant, `?limit=4${token ? `&page_token=${encodeURIComponent(token)}` : ''}`),
      );
      expect(response.status, response.text).toBe(200);
      pages.push(response.body.data.map((f: Folder) => f.id));
      token = response.body.next_cursor;
      expect(pages.length).toBeLessThanOrEqual(10);
    } while (token);

    // Assess
    expect(pages.map((p) => p.length)).toEqual([4, 4, 4, 1]);
    expect(pages.flat()).toEqual(expected);
    expect(new Set(pages.flat()).size).toBe(13);
  });

  it('returns no next_cursor when the page holds the last folder exactly', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.get(foldersPath(grant, '?limit=6'));
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.map((f: Folder) => f.id)).toEqual(SYSTEM_IDS);
    expect(response.body).not.toHaveProperty('next_cursor');
  });

  it('answers 400 for a page_token that is not one of its cursors', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.get(foldersPath(grant, '?page_token=not-a-cursor'));
    expect(response.status).toBe(400);
    expect(response.body.error.type).toBe('invalid_request_error');
    expect(response.body.error.message).toContain('page_token');
  });

  it('filters by parent_id (direct children only) and by single_level (top level only)', async () => {
    // Prepare: Projects > (Apollo > Moon), Projects > Gemini; Personal at top level
    const grant = await makeAgentGrant(api);
    const projects = await createFolder(grant, { name: 'Projects' });
    const personal = await createFolder(grant, { name: 'Personal' });
    const apollo = await createFolder(grant, { name: 'Apollo', parent_id: projects.id });
    const gemini = await createFolder(grant, { name: 'Gemini', parent_id: projects.id });
    const moon = await createFolder(grant, { name: 'Moon', parent_id: apollo.id });

    // Act
    const children = await listAll(grant, `?parent_id=${projects.id}`);
    const grandchildren = await listAll(grant, `?parent_id=${apollo.id}`);
    const leaf = await listAll(grant, `?parent_id=${moon.id}`);
    const topLevel = await listAll(grant, '?single_level=true');
    const everything = await listAll(grant, '?single_level=false');

    // Assess
    expect(children.map((f) => f.id)).toEqual([apollo.id, gemini.id]);
    expect(children.every((f) => f.parent_id === projects.id)).toBe(true);
    expect(grandchildren.map((f) => f.id)).toEqual([moon.id]);
    expect(leaf).toEqual([]);
    expect(topLevel.map((f) => f.id)).toEqual([...SYSTEM_IDS, personal.id, projects.id]);
    expect(everything.map((f) => f.id)).toEqual([
      ...SYSTEM_IDS,
      apollo.id,
      gemini.id,
      moon.id,
      personal.id,
      projects.id,
    ]);
    expect(everything.find((f) => f.id === projects.id)!.child_count).toBe(2);
    expect(everything.find((f) => f.id === apollo.id)!.child_count).toBe(1);
    expect(everything.find((f) => f.id === moon.id)!.child_count).toBe(0);
  });

  it('answers 404 for a parent_id that is not a folder of the mailbox', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.get(foldersPath(grant, '?parent_id=fld_unknown'));
    expect(response.status).toBe(404);
    expect(response.body.error.type).toBe('not_found_error');
    expect(response.body.error.message).toContain('fld_unknown');
  });

  it('accepts include_hidden_folders (Agent Accounts have no hidden folders)', async () => {
    const grant = await makeAgentGrant(api);
    const custom = await createFolder(grant, { name: 'Visible' });
    for (const value of ['true', 'false']) {
      const response = await api.get(foldersPath(grant, `?include_hidden_folders=${value}`));
      expect(response.status, response.text).toBe(200);
      expect(response.body.data.map((f: Folder) => f.id)).toEqual([...SYSTEM_IDS, custom.id]);
    }
  });

  it('projects each folder to the fields named in select', async () => {
    const grant = await makeAgentGrant(api);
    const custom = await createFolder(grant, { name: 'Receipts', background_color: '#112233' });
    const response = await api.get(foldersPath(grant, '?select=id,name'));
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual([
      { id: 'inbox', name: 'Inbox' },
      { id: 'sent', name: 'Sent' },
      { id: 'drafts', name: 'Drafts' },
      { id: 'trash', name: 'Trash' },
      { id: 'spam', name: 'Spam' },
      { id: 'archive', name: 'Archive' },
      { id: custom.id, name: 'Receipts' },
    ]);
  });

  it.each([
    ['shared_from=someone@example.com', 'shared_from'],
    ['select=id,colour', 'colour'],
    ['limit=0', 'limit'],
    ['single_level=maybe', 'single_level'],
    ['unknown=1', 'unknown'],
  ])('answers 400 for %s', async (query, named) => {
    const grant = await makeAgentGrant(api);
    const response = await api.get(foldersPath(grant, `?${query}`));
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.type).toBe('invalid_request_error');
    expect(response.body.error.message).toContain(named);
  });
});

describe('POST /v3/grants/{grant_id}/folders', () => {
  it('creates a custom folder with trimmed name and colours, listed after the system folders', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);

    // Act
    const response = await api.post(foldersPath(grant), {
      name: '  Invoices 2024  ',
      background_color: '#A1b2C3',
      text_color: '#000000',
    });

    // Assess
    expect(response.status, response.text).toBe(200);
    const folder = response.body.data;
    expect(folder.id).toMatch(/^fld_[0-9a-z]{26}$/);
    expect(folder).toEqual({
      id: folder.id,
      object: 'folder',
      grant_id: grant.id,
      name: 'Invoices 2024',
      background_color: '#A1b2C3',
      text_color: '#000000',
      system_folder: false,
      attributes: [],
      total_count: 0,
      unread_count: 0,
      child_count: 0,
    });
    const listed = await listAll(grant);
    expect(listed.map((f) => f.id)).toEqual([...SYSTEM_IDS, folder.id]);
    expect(listed.at(-1)).toEqual(folder);
  });

  it('creates a nested folder and counts it as a child of its parent', async () => {
    const grant = await makeAgentGrant(api);
    const parent = await createFolder(grant, { name: 'Clients' });
    const child = await createFolder(grant, { name: 'Acme', parent_id: parent.id });
    expect(child.parent_id).toBe(parent.id);
    expect((await getFolder(grant, parent.id)).child_count).toBe(1);
    expect((await getFolder(grant, child.id)).parent_id).toBe(parent.id);
  });

  it('nests a custom folder under a system folder and reports the same child_count from GET and list', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const child = await createFolder(grant, { name: 'Newsletters', parent_id: 'inbox' });
    expect(child.parent_id).toBe('inbox');

    // Act
    const listed = (await listAll(grant)).find((f) => f.id === 'inbox')!;
    const fetched = await getFolder(grant, 'inbox');

    // Assess
    expect(listed.child_count).toBe(1);
    expect(fetched.child_count).toBe(1);
  });

  it('answers 409 for a sibling with the same name in any case, but allows it under another parent', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const first = await createFolder(grant, { name: 'Work' });

    // Act
    const duplicate = await api.post(foldersPath(grant), { name: 'WORK' });
    const padded = await api.post(foldersPath(grant), { name: ' work ' });
    const elsewhere = await api.post(foldersPath(grant), { name: 'work', parent_id: first.id });

    // Assess
    expect(duplicate.status).toBe(409);
    expect(duplicate.body.error.type).toBe('conflict_error');
    expect(duplicate.body.error.message).toContain('WORK');
    expect(padded.status).toBe(409);
    expect(elsewhere.status, elsewhere.text).toBe(200);
    expect(elsewhere.body.data).toMatchObject({ name: 'work', parent_id: first.id });
    expect((await listAll(grant)).filter((f) => f.name.toLowerCase() === 'work')).toHaveLength(2);
  });

  it('answers 409 for a custom folder named like a system folder at top level', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.post(foldersPath(grant), { name: 'inbox' });
    expect(response.status, response.text).toBe(409);
    expect(response.body.error.type).toBe('conflict_error');
  });

  it('answers 404 for an unknown parent and creates nothing', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.post(foldersPath(grant), {
      name: 'Orphan',
      parent_id: 'fld_00000000000000000000000000',
    });
    expect(response.status).toBe(404);
    expect(response.body.error.type).toBe('not_found_error');
    expect(response.body.error.message).toContain('fld_00000000000000000000000000');
    expect((await listAll(grant)).map((f) => f.id)).toEqual(SYSTEM_IDS);
  });

  it.each([
    [{ name: 'Red', background_color: 'red' }, 'background_color'],
    [{ name: 'Short', background_color: '#12345' }, 'background_color'],
    [{ name: 'Hex', text_color: '#GGGGGG' }, 'text_color'],
    [{ name: 'Long', text_color: '#1234567' }, 'text_color'],
    [{ name: '   ' }, 'name'],
    [{ name: '' }, 'name'],
    [{ name: 'x'.repeat(257) }, 'name'],
    [{ name: 42 }, 'name'],
    [{}, 'name'],
    [{ name: 'Ok', colour: '#000000' }, 'colour'],
  ])('answers 400 for %j naming the field', async (body, field) => {
    const grant = await makeAgentGrant(api);
    const response = await api.post(foldersPath(grant), body);
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.type).toBe('invalid_request_error');
    expect(response.body.error.message).toContain(field);
    expect((await listAll(grant)).map((f) => f.id)).toEqual(SYSTEM_IDS);
  });
});

describe('GET /v3/grants/{grant_id}/folders/{folder_id}', () => {
  it('returns a system folder and a custom folder', async () => {
    const grant = await makeAgentGrant(api);
    const custom = await createFolder(grant, { name: 'Travel', text_color: '#ffffff' });
    expect(await getFolder(grant, 'spam')).toEqual({
      id: 'spam',
      object: 'folder',
      grant_id: grant.id,
      name: 'Spam',
      system_folder: true,
      attributes: ['\\Junk'],
      total_count: 0,
      unread_count: 0,
      child_count: 0,
    });
    expect(await getFolder(grant, custom.id)).toEqual(custom);
  });

  it('projects with select', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.get(foldersPath(grant, '/archive?select=id,attributes'));
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual({ id: 'archive', attributes: ['\\Archive'] });
  });

  it('answers 404 for an unknown folder', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.get(foldersPath(grant, '/fld_00000000000000000000000000'));
    expect(response.status).toBe(404);
    expect(response.body.error.type).toBe('not_found_error');
  });

  it('answers 404 for a folder of another grant of the same application', async () => {
    const owner = await makeAgentGrant(api);
    const other = await makeAgentGrant(api);
    const folder = await createFolder(owner, { name: 'Private' });
    const response = await api.get(foldersPath(other, `/${folder.id}`));
    expect(response.status).toBe(404);
    expect(response.body.error.type).toBe('not_found_error');
  });
});

describe('PUT /v3/grants/{grant_id}/folders/{folder_id}', () => {
  it('renames and recolours a custom folder', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const folder = await createFolder(grant, { name: 'Old name', background_color: '#111111' });

    // Act
    const response = await api.put(foldersPath(grant, `/${folder.id}`), { name: ' New name ', text_color: '#eeeeee' });

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(response.body.data).toEqual({
      ...folder,
      name: 'New name',
      background_color: '#111111',
      text_color: '#eeeeee',
    });
    expect(await getFolder(grant, folder.id)).toEqual(response.body.data);
    // The old name is free again, the new one is taken.
    expect((await api.post(foldersPath(grant), { name: 'old name' })).status).toBe(200);
    expect((await api.post(foldersPath(grant), { name: 'NEW NAME' })).status).toBe(409);
  });

  it('changes only the case of a name', async () => {
    const grant = await makeAgentGrant(api);
    const folder = await createFolder(grant, { name: 'receipts' });
    const response = await api.put(foldersPath(grant, `/${folder.id}`), { name: 'Receipts' });
    expect(response.status, response.text).toBe(200);
    expect(response.body.data.name).toBe('Receipts');
    expect((await api.post(foldersPath(grant), { name: 'RECEIPTS' })).status).toBe(409);
  });

  it('answers 409 when renaming to the name of a sibling', async () => {
    const grant = await makeAgentGrant(api);
    await createFolder(grant, { name: 'Alpha' });
    const beta = await createFolder(grant, { name: 'Beta' });
    const response = await api.put(foldersPath(grant, `/${beta.id}`), { name: 'alpha' });
    expect(response.status, response.text).toBe(409);
    expect(response.body.error.type).toBe('conflict_error');
    expect((await getFolder(grant, beta.id)).name).toBe('Beta');
  });

  it('moves a folder under another parent and back to the top level with parent_id null', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const parent = await createFolder(grant, { name: 'Parent' });
    const folder = await createFolder(grant, { name: 'Movable' });

    // Act: move under the parent
    const moved = await api.put(foldersPath(grant, `/${folder.id}`), { parent_id: parent.id });

    // Assess
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.data.parent_id).toBe(parent.id);
    expect((await listAll(grant, `?parent_id=${parent.id}`)).map((f) => f.id)).toEqual([folder.id]);
    expect((await getFolder(grant, parent.id)).child_count).toBe(1);
    expect((await listAll(grant, '?single_level=true')).map((f) => f.id)).toEqual([...SYSTEM_IDS, parent.id]);

    // Act: back to the top level
    const back = await api.put(foldersPath(grant, `/${folder.id}`), { parent_id: null });

    // Assess
    expect(back.status, back.text).toBe(200);
    expect(back.body.data).not.toHaveProperty('parent_id');
    expect(await getFolder(grant, folder.id)).not.toHaveProperty('parent_id');
    expect((await getFolder(grant, parent.id)).child_count).toBe(0);
    expect((await listAll(grant, '?single_level=true')).map((f) => f.id)).toEqual([
      ...SYSTEM_IDS,
      folder.id,
      parent.id,
    ]);
    // The name guard moved with it: a top-level sibling of that name is refused, a child of the parent is not.
    expect((await api.post(foldersPath(grant), { name: 'MOVABLE' })).status).toBe(409);
    expect((await api.post(foldersPath(grant), { name: 'movable', parent_id: parent.id })).status).toBe(200);
  });

  it('accepts parent_id null for a folder that is already at the top level, again and again', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const folder = await createFolder(grant, { name: 'Top' });

    // Act
    const first = await api.put(foldersPath(grant, `/${folder.id}`), { parent_id: null });
    const second = await api.put(foldersPath(grant, `/${folder.id}`), { parent_id: null });
    const recolour = await api.put(foldersPath(grant, `/${folder.id}`), { background_color: '#abcdef' });
    const third = await api.put(foldersPath(grant, `/${folder.id}`), { parent_id: null, name: 'Top' });

    // Assess
    expect(first.status, first.text).toBe(200);
    expect(second.status, second.text).toBe(200);
    expect(recolour.status, recolour.text).toBe(200);
    expect(third.status, third.text).toBe(200);
    expect(await getFolder(grant, folder.id)).toEqual({ ...folder, background_color: '#abcdef' });
  });

  it('answers 409 when moving next to a sibling of the same name, and leaves the folder where it was', async () => {
    const grant = await makeAgentGrant(api);
    const parent = await createFolder(grant, { name: 'Team' });
    await createFolder(grant, { name: 'Notes', parent_id: parent.id });
    const folder = await createFolder(grant, { name: 'NOTES' });
    const response = await api.put(foldersPath(grant, `/${folder.id}`), { parent_id: parent.id });
    expect(response.status, response.text).toBe(409);
    expect(response.body.error.type).toBe('conflict_error');
    expect(await getFolder(grant, folder.id)).toEqual(folder);
    expect((await getFolder(grant, parent.id)).child_count).toBe(1);
  });

  it('answers 400 when the move would make the folder its own ancestor', async () => {
    // Prepare: A > B > C
    const grant = await makeAgentGrant(api);
    const a = await createFolder(grant, { name: 'A' });
    const b = await createFolder(grant, { name: 'B', parent_id: a.id });
    const c = await createFolder(grant, { name: 'C', parent_id: b.id });

    // Act
    const underSelf = await api.put(foldersPath(grant, `/${a.id}`), { parent_id: a.id });
    const underGrandchild = await api.put(foldersPath(grant, `/${a.id}`), { parent_id: c.id });
    const underChild = await api.put(foldersPath(grant, `/${b.id}`), { parent_id: c.id });

    // Assess
    for (const response of [underSelf, underGrandchild, underChild]) {
      expect(response.status, response.text).toBe(400);
      expect(response.body.error.type).toBe('invalid_request_error');
      expect(response.body.error.message).toContain('own ancestor');
    }
    expect((await getFolder(grant, a.id)).parent_id).toBeUndefined();
    expect((await getFolder(grant, b.id)).parent_id).toBe(a.id);
  });

  it('answers 404 when moving under an unknown parent', async () => {
    const grant = await makeAgentGrant(api);
    const folder = await createFolder(grant, { name: 'Somewhere' });
    const response = await api.put(foldersPath(grant, `/${folder.id}`), {
      parent_id: 'fld_00000000000000000000000000',
    });
    expect(response.status).toBe(404);
    expect(response.body.error.type).toBe('not_found_error');
  });

  it('answers 404 for an unknown folder', async () => {
    const grant = await makeAgentGrant(api);
    const response = await api.put(foldersPath(grant, '/fld_00000000000000000000000000'), { name: 'Nope' });
    expect(response.status).toBe(404);
    expect(response.body.error.type).toBe('not_found_error');
  });

  it.each([
    [{}, 'at least one field'],
    [{ name: '  ' }, 'name'],
    [{ background_color: '#zzzzzz' }, 'background_color'],
    [{ parent_id: '' }, 'parent_id'],
    [{ system_folder: true }, 'system_folder'],
  ])('answers 400 for %j', async (body, message) => {
    const grant = await makeAgentGrant(api);
    const folder = await createFolder(grant, { name: 'Target' });
    const response = await api.put(foldersPath(grant, `/${folder.id}`), body);
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.type).toBe('invalid_request_error');
    expect(response.body.error.message).toContain(message);
  });

  it('recolours a system folder but refuses to rename or move it', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const parent = await createFolder(grant, { name: 'Box' });

    // Act
    const rename = await api.put(foldersPath(grant, '/inbox'), { name: 'Incoming' });
    const move = await api.put(foldersPath(grant, '/inbox'), { parent_id: parent.id });
    const recolour = await api.put(foldersPath(grant, '/inbox'), {
      background_color: '#ff0000',
      text_color: '#00ff00',
    });

    // Assess
    expect(rename.status, rename.text).toBe(400);
    expect(rename.body.error.type).toBe('invalid_request_error');
    expect(rename.body.error.message).toContain('inbox');
    expect(move.status, move.text).toBe(400);
    expect(recolour.status, recolour.text).toBe(200);
    expect(recolour.body.data).toEqual({
      id: 'inbox',
      object: 'folder',
      grant_id: grant.id,
      name: 'Inbox',
      background_color: '#ff0000',
      text_color: '#00ff00',
      system_folder: true,
      attributes: ['\\Inbox'],
      total_count: 0,
      unread_count: 0,
      child_count: 0,
    });
    expect(await getFolder(grant, 'inbox')).toEqual(recolour.body.data);
  });
});

describe('DELETE /v3/grants/{grant_id}/folders/{folder_id}', () => {
  it('deletes an empty custom folder, which then answers 404 and frees its name', async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const folder = await createFolder(grant, { name: 'Temporary' });

    // Act
    const response = await api.delete(foldersPath(grant, `/${folder.id}`));

    // Assess
    expect(response.status, response.text).toBe(200);
    expect(Object.keys(response.body)).toEqual(['request_id']);
    expect(response.body.request_id).toMatch(/^req_/);
    expect((await api.get(foldersPath(grant, `/${folder.id}`))).status).toBe(404);
    expect((await api.delete(foldersPath(grant, `/${folder.id}`))).status).toBe(404);
    expect((await listAll(grant)).map((f) => f.id)).toEqual(SYSTEM_IDS);
    expect((await api.post(foldersPath(grant), { name: 'temporary' })).status).toBe(200);
  });

  it('deletes a folder that was moved to the top level', async () => {
    const grant = await makeAgentGrant(api);
    const parent = await createFolder(grant, { name: 'Outer' });
    const folder = await createFolder(grant, { name: 'Inner', parent_id: parent.id });
    expect((await api.put(foldersPath(grant, `/${folder.id}`), { parent_id: null })).status).toBe(200);
    const response = await api.delete(foldersPath(grant, `/${folder.id}`));
    expect(response.status, response.text).toBe(200);
    expect((await api.post(foldersPath(grant), { name: 'Inner' })).status).toBe(200);
  });

  it('answers 400 for every system folder', async () => {
    const grant = await makeAgentGrant(api);
    for (const id of SYSTEM_IDS) {
      const response = await api.delete(foldersPath(grant, `/${id}`));
      expect({ id, status: response.status, type: response.body.error?.type }).toEqual({
        id,
        status: 400,
        type: 'invalid_request_error',
      });
    }
    expect((await listAll(grant)).map((f) => f.id)).toEqual(SYSTEM_IDS);
  });

  it('answers 409 for a folder with subfolders', async () => {
    const grant = await makeAgentGrant(api);
    const parent = await createFolder(grant, { name: 'Parent' });
    const child = await createFolder(grant, { name: 'Child', parent_id: parent.id });
    const refused = await api.delete(foldersPath(grant, `/${parent.id}`));
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.error.type).toBe('conflict_error');
    expect((await api.delete(foldersPath(grant, `/${child.id}`))).status).toBe(200);
    expect((await api.delete(foldersPath(grant, `/${parent.id}`))).status).toBe(200);
  });

  it('answers 409 while the folder holds a message, and deletes it once the message moved out', async () => {
    // Prepare
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const folder = await createFolder(b, { name: 'Keep' });
    const { received } = await deliver(a, b, 'Filed message');
    const filed = await api.put(`/v3/grants/${b.id}/messages/${received.id}`, { folders: [folder.id] });
    expect(filed.status, filed.text).toBe(200);
    expect(filed.body.data.folders).toEqual([folder.id]);

    // Act
    const refused = await api.delete(foldersPath(b, `/${folder.id}`));

    // Assess
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.error.type).toBe('conflict_error');
    expect(refused.body.error.message).toContain('1 message');
    expect(counts(await getFolder(b, folder.id))).toEqual({ id: folder.id, total_count: 1, unread_count: 1 });

    // Act: move the message out, then delete
    const moved = await api.put(`/v3/grants/${b.id}/messages/${received.id}`, { folders: ['archive'] });
    expect(moved.status, moved.text).toBe(200);
    const deleted = await api.delete(foldersPath(b, `/${folder.id}`));

    // Assess
    expect(deleted.status, deleted.text).toBe(200);
    expect((await api.get(foldersPath(b, `/${folder.id}`))).status).toBe(404);
    expect(await folderCounts(b, ['inbox', 'archive'])).toEqual([
      { id: 'inbox', total_count: 0, unread_count: 0 },
      { id: 'archive', total_count: 1, unread_count: 1 },
    ]);
    expect((await api.get(`/v3/grants/${b.id}/messages/${received.id}`)).body.data.folders).toEqual(['archive']);
  });
});

describe('folder counts', () => {
  it('follow sends, marking read and unread, moves and trash', async () => {
    // Prepare
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const custom = await createFolder(b, { name: 'Later' });

    // Act: two messages A -> B
    const first = await deliver(a, b, 'Count one');
    const second = await deliver(a, b, 'Count two');

    // Assess
    expect(await folderCounts(b, ['inbox', 'sent', 'trash', 'archive', custom.id])).toEqual([
      { id: 'inbox', total_count: 2, unread_count: 2 },
      { id: 'sent', total_count: 0, unread_count: 0 },
      { id: 'trash', total_count: 0, unread_count: 0 },
      { id: 'archive', total_count: 0, unread_count: 0 },
      { id: custom.id, total_count: 0, unread_count: 0 },
    ]);
    expect(await folderCounts(a, ['inbox', 'sent'])).toEqual([
      { id: 'inbox', total_count: 0, unread_count: 0 },
      { id: 'sent', total_count: 2, unread_count: 0 },
    ]);

    // Act: mark the first read
    expect((await api.put(`/v3/grants/${b.id}/messages/${first.received.id}`, { unread: false })).status).toBe(200);
    expect(counts(await getFolder(b, 'inbox'))).toEqual({ id: 'inbox', total_count: 2, unread_count: 1 });

    // Act: marking it read again changes nothing
    expect((await api.put(`/v3/grants/${b.id}/messages/${first.received.id}`, { unread: false })).status).toBe(200);
    expect(counts(await getFolder(b, 'inbox'))).toEqual({ id: 'inbox', total_count: 2, unread_count: 1 });

    // Act: move the unread second message to the custom folder
    expect((await api.put(`/v3/grants/${b.id}/messages/${second.received.id}`, { folders: [custom.id] })).status).toBe(
      200,
    );
    expect(await folderCounts(b, ['inbox', custom.id])).toEqual([
      { id: 'inbox', total_count: 1, unread_count: 0 },
      { id: custom.id, total_count: 1, unread_count: 1 },
    ]);

    // Act: file the second message in two folders at once, then mark it read
    expect(
      (await api.put(`/v3/grants/${b.id}/messages/${second.received.id}`, { folders: [custom.id, 'archive'] })).status,
    ).toBe(200);
    expect(await folderCounts(b, [custom.id, 'archive'])).toEqual([
      { id: custom.id, total_count: 1, unread_count: 1 },
      { id: 'archive', total_count: 1, unread_count: 1 },
    ]);
    expect((await api.put(`/v3/grants/${b.id}/messages/${second.received.id}`, { unread: false })).status).toBe(200);
    expect(await folderCounts(b, [custom.id, 'archive'])).toEqual([
      { id: custom.id, total_count: 1, unread_count: 0 },
      { id: 'archive', total_count: 1, unread_count: 0 },
    ]);

    // Act: mark the first unread again, then trash it
    expect((await api.put(`/v3/grants/${b.id}/messages/${first.received.id}`, { unread: true })).status).toBe(200);
    expect(counts(await getFolder(b, 'inbox'))).toEqual({ id: 'inbox', total_count: 1, unread_count: 1 });
    const trashed = await api.delete(`/v3/grants/${b.id}/messages/${first.received.id}`);
    expect(trashed.status, trashed.text).toBe(200);

    // Assess
    expect(await folderCounts(b, ['inbox', 'trash', 'archive', custom.id])).toEqual([
      { id: 'inbox', total_count: 0, unread_count: 0 },
      { id: 'trash', total_count: 1, unread_count: 1 },
      { id: 'archive', total_count: 1, unread_count: 0 },
      { id: custom.id, total_count: 1, unread_count: 0 },
    ]);
    expect((await api.get(`/v3/grants/${b.id}/messages/${first.received.id}`)).body.data.folders).toEqual(['trash']);
  });

  it('counts drafts in the Drafts folder', async () => {
    const grant = await makeAgentGrant(api);
    const draft = await api.post(`/v3/grants/${grant.id}/drafts`, { subject: 'Unfinished', body: '<p>…</p>' });
    expect(draft.status, draft.text).toBe(200);
    expect(counts(await getFolder(grant, 'drafts'))).toEqual({ id: 'drafts', total_count: 1, unread_count: 0 });
    expect((await api.delete(`/v3/grants/${grant.id}/drafts/${draft.body.data.id}`)).status).toBe(200);
    expect(counts(await getFolder(grant, 'drafts'))).toEqual({ id: 'drafts', total_count: 0, unread_count: 0 });
  });

  it('answers 404 when a message is moved to an unknown folder, and leaves the counts alone', async () => {
    const a = await makeAgentGrant(api);
    const b = await makeAgentGrant(api);
    const { received } = await deliver(a, b, 'Stay put');
    const response = await api.put(`/v3/grants/${b.id}/messages/${received.id}`, {
      folders: ['fld_00000000000000000000000000'],
    });
    expect(response.status, response.text).toBe(404);
    expect(counts(await getFolder(b, 'inbox'))).toEqual({ id: 'inbox', total_count: 1, unread_count: 1 });
  });
});

describe('folders of another application', () => {
  it("answers 404 for every folder endpoint on another application's grant", async () => {
    // Prepare
    const grant = await makeAgentGrant(api);
    const folder = await createFolder(grant, { name: 'Mine' });
    const other = await otherApi('other');

    // Act
    const responses = {
      list: await other.get(foldersPath(grant)),
      create: await other.post(foldersPath(grant), { name: 'Intruder' }),
      get: await other.get(foldersPath(grant, `/${folder.id}`)),
      getSystem: await other.get(foldersPath(grant, '/inbox')),
      update: await other.put(foldersPath(grant, `/${folder.id}`), { name: 'Renamed' }),
      delete: await other.delete(foldersPath(grant, `/${folder.id}`)),
    };

    // Assess
    for (const [name, response] of Object.entries(responses)) {
      expect({ name, status: response.status, type: response.body?.error?.type }).toEqual({
        name,
        status: 404,
        type: 'not_found_error',
      });
    }
    expect((await listAll(grant)).map((f) => f.id)).toEqual([...SYSTEM_IDS, folder.id]);
    expect((await getFolder(grant, folder.id)).name).toBe('Mine');
  });
});

describe('provider-only parameters', () => {
  it('answers the same 400 on every operation the contract lists them for', async () => {
    const grant = await makeAgentGrant(api);
    const g = `/v3/grants/${grant.id}`;
    const folder = (await api.post(`${g}/folders`, { name: 'Kept' })).body.data;
    const shared = "'shared_from' is not supported for Agent Accounts: they have no shared mailboxes";
    const sharedFolder = "'shared_folder_id' is not supported for Agent Accounts: they have no shared folders";
    const imap = "'query_imap' is only available for IMAP grants; Agent Accounts are searched directly";
    const id = 'msg_01jzzzzzzzzzzzzzzzzzzzzzzz';
    const cases: [string, string, string, unknown?][] = [
      ['GET', `${g}/messages?shared_folder_id=f`, sharedFolder],
      ['GET', `${g}/messages/${id}?shared_from=a%40b.io`, shared],
      ['PUT', `${g}/messages/${id}?shared_from=a%40b.io`, shared, { unread: false }],
      ['PUT', `${g}/messages/${id}?query_imap=true`, imap, { unread: false }],
      ['DELETE', `${g}/messages/${id}?shared_from=a%40b.io`, shared],
      ['PUT', `${g}/messages/clean?shared_from=a%40b.io`, shared, { message_id: [id] }],
      ['GET', `${g}/threads/thr_x?shared_folder_id=f`, sharedFolder],
      ['PUT', `${g}/threads/thr_x?shared_from=a%40b.io`, shared, { unread: false }],
      ['DELETE', `${g}/threads/thr_x?shared_from=a%40b.io`, shared],
      ['POST', `${g}/folders?shared_from=a%40b.io`, shared, { name: 'New' }],
      ['GET', `${g}/folders/${folder.id}?shared_from=a%40b.io`, shared],
      ['PUT', `${g}/folders/${folder.id}?shared_from=a%40b.io`, shared, { name: 'Renamed' }],
      ['DELETE', `${g}/folders/${folder.id}?shared_from=a%40b.io`, shared],
      ['GET', `${g}/drafts/drf_x?query_imap=true`, imap],
      ['GET', `${g}/attachments/att_x?message_id=${id}&query_imap=true`, imap],
      ['GET', `${g}/attachments/att_x/download?message_id=${id}&query_imap=true`, imap],
    ];
    for (const [method, path, message, body] of cases) {
      const response = await api.request(method, path, body === undefined ? {} : { body });
      expect(response.status, `${method} ${path}: ${response.text}`).toBe(400);
      expect(response.body.error.message, `${method} ${path}`).toBe(message);
    }
    // Nothing was changed by the refused requests, and the harmless forms are accepted.
    expect((await api.get(`${g}/folders/${folder.id}?include_hidden_folders=true`)).body.data.name).toBe('Kept');
    expect((await api.get(`${g}/drafts?query_imap=false`)).status).toBe(200);
  });
});
