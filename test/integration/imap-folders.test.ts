import type { ImapFlow } from 'imapflow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiClient, type ApiClient } from '../support/api';
import { makeApplication } from '../support/factories';
import { startGateway, type Gateway } from '../support/gateway';
import { connectImapGrant, useDovecot, withImapSession } from '../support/dovecot';
import { createTestQueue } from '../support/queues';
import { rememberSecret } from '../support/secrets';
import { grantNotifications, syncRun as runSync } from '../support/sync-runs';

/**
 * Folders of an IMAP grant through the API, against a real Dovecot: the stored mailbox's folders
 * with the account's server behind them (the FolderServer port). Each change is made on the server
 * first (CREATE, RENAME, DELETE), then stored with its notification; a refusal of the server stores
 * and announces nothing; the next sync finds what was done and reports nothing more.
 */
let gateway: Gateway;
let api: ApiClient;
let applicationId: string;
const USER = 'folders@example.org';
const PASSWORD = 'imap folders test password 5';
const dovecot = useDovecot([{ user: USER, password: PASSWORD }]);
let fanout: string;
let grant: { id: string; email: string };

beforeAll(async () => {
  rememberSecret(PASSWORD, 'the IMAP folders test password');
  fanout = await createTestQueue('imap-folders-fanout');
  Object.assign(process.env, {
    FANOUT_QUEUE_URL: fanout,
    MAIL_SYNC_QUEUE_URL: await createTestQueue('imap-folders-sync'),
  });
  gateway = await startGateway();
  const app = await makeApplication();
  applicationId = app.applicationId;
  api = apiClient(gateway.url, app.apiKey);
  grant = await connectImapGrant(api, dovecot, USER, PASSWORD);
  await syncRun();
  await notifications();
});
afterAll(async () => {
  await gateway?.close();
});

const syncRun = () => runSync(applicationId, grant.id);
const notifications = () => grantNotifications(fanout, grant.id);
const folderPath = (id: string) => `/v3/grants/${grant.id}/folders/${encodeURIComponent(id)}`;

/** The server's mailboxes, by path. */
const serverPaths = () =>
  withImapSession(dovecot, USER, PASSWORD, async (client) => (await client.list()).map((box) => box.path).sort());

const onServer = (act: (client: ImapFlow) => Promise<unknown>) => withImapSession(dovecot, USER, PASSWORD, act);

describe('IMAP folders through the API', () => {
  it('creates a folder on the server, then stores it with folder.created, and nests one under it', async () => {
    // Act
    const created = await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Clients', background_color: '#aabbcc' });
    const nested = await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Acme', parent_id: created.body.data?.id });

    // Assess
    expect(created.status, created.text).toBe(200);
    expect(nested.status, nested.text).toBe(200);
    expect(created.body.data).toMatchObject({ name: 'Clients', background_color: '#aabbcc', total_count: 0 });
    expect(nested.body.data).toMatchObject({ name: 'Acme', parent_id: created.body.data.id });
    const paths = await serverPaths();
    expect(paths).toContain('Clients');
    expect(paths.some((p) => /^Clients[./]Acme$/.test(p))).toBe(true);
    const announced = await notifications();
    expect(announced.map((n) => [n.type, n.data.object.id])).toEqual([
      ['folder.created', created.body.data.id],
      ['folder.created', nested.body.data.id],
    ]);
    expect((await api.get(folderPath(created.body.data.id))).body.data).toMatchObject({
      id: created.body.data.id,
      child_count: 1,
    });

    // The next sync finds both where they were put and says nothing more.
    await syncRun();
    expect(await notifications()).toEqual([]);
    const listed = (await api.get(`/v3/grants/${grant.id}/folders`)).body.data as { id: string; name: string }[];
    expect(
      listed
        .filter((f) => f.name === 'Clients' || f.name === 'Acme')
        .map((f) => f.id)
        .sort(),
    ).toEqual([created.body.data.id, nested.body.data.id].sort());
  });

  it('renames on the server, keeping the folder ID, and refuses moving a folder under another', async () => {
    // Prepare
    const folder = (await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Drafty' })).body.data;
    const other = (await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Elsewhere' })).body.data;
    await notifications();

    // Act
    const renamed = await api.put(folderPath(folder.id), { name: 'Final' });
    const moved = await api.put(folderPath(folder.id), { parent_id: other.id });

    // Assess
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body.data).toMatchObject({ id: folder.id, name: 'Final' });
    const paths = await serverPaths();
    expect(paths).toContain('Final');
    expect(paths).not.toContain('Drafty');
    expect(moved.status).toBe(400);
    expect(moved.body.error.message).toContain(
      "Moving a folder under another ('parent_id') is not available for IMAP grants",
    );
    expect((await notifications()).map((n) => [n.type, n.data.object.name])).toEqual([['folder.updated', 'Final']]);
    await syncRun();
    expect(await notifications()).toEqual([]);
    expect((await api.get(folderPath(folder.id))).body.data).toMatchObject({ id: folder.id, name: 'Final' });
  });

  it('deletes on the server, then the record with folder.deleted; a folder with subfolders stays', async () => {
    // Prepare
    const parent = (await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Parent' })).body.data;
    const child = (await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Child', parent_id: parent.id })).body.data;
    await notifications();

    // Act
    const refused = await api.delete(folderPath(parent.id));
    const deletedChild = await api.delete(folderPath(child.id));
    const deletedParent = await api.delete(folderPath(parent.id));

    // Assess
    expect(refused.status, refused.text).toBe(409);
    expect(refused.body.error.message).toContain('has subfolders');
    expect(deletedChild.status, deletedChild.text).toBe(200);
    expect(deletedParent.status, deletedParent.text).toBe(200);
    expect((await serverPaths()).filter((p) => p.startsWith('Parent'))).toEqual([]);
    expect((await notifications()).map((n) => [n.type, n.data.object.id])).toEqual([
      ['folder.deleted', child.id],
      ['folder.deleted', parent.id],
    ]);
    expect((await api.get(folderPath(parent.id))).status).toBe(404);
    await syncRun();
    expect(await notifications()).toEqual([]);
  });

  it('stores and announces nothing when the server refuses the change', async () => {
    // Prepare: a mailbox another client made, not synced yet, and one of ours to rename onto it.
    await onServer((client) => client.mailboxCreate('Taken'));
    const ours = (await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Mine' })).body.data;
    await notifications();
    const before = await api.get(`/v3/grants/${grant.id}/folders`);

    // Act
    const refused = await api.put(folderPath(ours.id), { name: 'Taken' });

    // Assess
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.error.message).toMatch(/^The IMAP server refused to rename the folder to 'Taken': /);
    expect((await api.get(`/v3/grants/${grant.id}/folders`)).body.data).toEqual(before.body.data);
    expect(await notifications()).toEqual([]);
    expect(await serverPaths()).toEqual(expect.arrayContaining(['Mine', 'Taken']));
    // The sync brings the other client's folder in, announced once.
    await syncRun();
    expect((await notifications()).map((n) => [n.type, n.data.object.name])).toEqual([['folder.created', 'Taken']]);
  });

  it('takes a folder the server already has as created, and the sync does not announce it again', async () => {
    // Prepare
    await onServer((client) => client.mailboxCreate('Shared'));

    // Act
    const created = await api.post(`/v3/grants/${grant.id}/folders`, { name: 'Shared' });

    // Assess
    expect(created.status, created.text).toBe(200);
    expect((await notifications()).map((n) => [n.type, n.data.object.id])).toEqual([
      ['folder.created', created.body.data.id],
    ]);
    await syncRun();
    expect(await notifications()).toEqual([]);
  });
});
