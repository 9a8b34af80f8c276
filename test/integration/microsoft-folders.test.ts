import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import { FolderObject } from '#schemas/mail';
import { graphFolders } from '#shared/microsoft/folders';
import type { GrantRecord } from '#shared/db/grants';
import { ConflictError, InvalidRequestError, NotFoundError } from '#shared/errors';
import { startGraphFake, type GraphFake } from '../../scripts/local-stack/microsoft/server';
import { connectFakeMicrosoftGrant } from '../support/microsoft';

/**
 * Provider B's folders, live (shared/microsoft/folders.ts): Outlook's mail folders through the local
 * Graph fake, child folders under their parents, the well-known folders as system folders with their
 * roles, Graph's counts; every request and answer checked by the fake against Graph's descriptions.
 */
/** Responses are schemas too: what the provider answers is a FolderObject as published. */
const validFolder = new Ajv({ allErrors: true, strict: false }).compile(FolderObject);

let fake: GraphFake;
let grant: GrantRecord;
let email: string;

beforeAll(async () => {
  fake = await startGraphFake();
  ({ grant, email } = await connectFakeMicrosoftGrant(fake, 'microsoft live folders'));
});

afterEach(() => {
  expect(fake.violations()).toEqual([]);
});

afterAll(async () => {
  await fake?.close();
});

describe("Provider B's folders, live", () => {
  it("lists Outlook's well-known folders first, as system folders with their roles and Graph's counts", async () => {
    // Prepare
    fake.deliver(email, { from: 'a@example.org', to: email, subject: 'One', text: 'x' });
    fake.deliver(email, { from: 'a@example.org', to: email, subject: 'Two', text: 'y', isRead: true });
    const before = fake.requests().length;

    // Act
    const page = await graphFolders.list(grant, {}, 100);

    // Assess
    const inboxId = fake.folderId(email, 'inbox');
    expect(page.items.slice(0, 7).map((f) => f.id)).toEqual(
      ['inbox', 'drafts', 'sentitems', 'deleteditems', 'junkemail', 'archive', 'outbox'].map((n) =>
        fake.folderId(email, n),
      ),
    );
    expect(page.items[0]).toEqual({
      id: inboxId,
      object: 'folder',
      grant_id: grant.id,
      name: 'Inbox',
      system_folder: true,
      attributes: ['\\Inbox'],
      total_count: 2,
      unread_count: 1,
      child_count: 0,
    });
    expect(page.items.map((f) => f.attributes)).toEqual([
      ['\\Inbox'],
      ['\\Drafts'],
      ['\\Sent'],
      ['\\Trash'],
      ['\\Junk'],
      ['\\Archive'],
      [],
    ]);
    expect(page.items.every((f) => f.system_folder && f.parent_id === undefined)).toBe(true);
    expect(page.items.filter((f) => !validFolder(f))).toEqual([]);
    // The folders and the well-known names' IDs went to Graph together: one $batch, nothing alone.
    const made = fake.requests().slice(before);
    expect(made.filter((r) => !r.inBatch)).toEqual([expect.objectContaining({ method: 'POST', path: '/v1.0/$batch' })]);
    expect(made.filter((r) => r.inBatch)).toHaveLength(9);
  });

  it('gets a folder by its ID or by a well-known name, ours or Graph’s', async () => {
    // Act
    const [byId, byName, byAlias] = await Promise.all([
      graphFolders.get(grant, fake.folderId(email, 'sentitems')),
      graphFolders.get(grant, 'SentItems'),
      graphFolders.get(grant, 'sent'),
    ]);

    // Assess
    expect(byId).toMatchObject({ name: 'Sent Items', system_folder: true, attributes: ['\\Sent'] });
    expect(byName).toEqual(byId);
    expect(byAlias).toEqual(byId);
    await expect(graphFolders.get(grant, 'AAMkADnosuchfolder=')).rejects.toThrow(NotFoundError);
    await expect(graphFolders.get(grant, '../messages')).rejects.toThrow(NotFoundError);
  });

  it('creates folders at the top and under a parent, lists them by level, renames and deletes them', async () => {
    // Act
    const projects = await graphFolders.create(grant, { name: ' Projects ' });
    const apollo = await graphFolders.create(grant, { name: 'Apollo', parent_id: projects.id });
    const underInbox = await graphFolders.create(grant, { name: 'Receipts', parent_id: 'inbox' });

    // Assess
    expect(projects).toMatchObject({ name: 'Projects', system_folder: false, attributes: [], child_count: 0 });
    expect(projects.parent_id).toBeUndefined();
    expect(apollo).toMatchObject({ name: 'Apollo', parent_id: projects.id });
    expect(underInbox.parent_id).toBe(fake.folderId(email, 'inbox'));
    expect((await graphFolders.get(grant, projects.id)).child_count).toBe(1);
    expect((await graphFolders.list(grant, { parent_id: projects.id }, 100)).items.map((f) => f.id)).toEqual([
      apollo.id,
    ]);
    const topLevel = (await graphFolders.list(grant, { single_level: true }, 100)).items.map((f) => f.id);
    expect(topLevel).toContain(projects.id);
    expect(topLevel).not.toContain(apollo.id);
    const all = (await graphFolders.list(grant, {}, 100)).items.map((f) => f.id);
    // Children follow their parents.
    expect(all.indexOf(apollo.id)).toBe(all.indexOf(projects.id) + 1);
    expect(all.indexOf(underInbox.id)).toBe(all.indexOf(fake.folderId(email, 'inbox')) + 1);

    const renamed = await graphFolders.update(grant, apollo.id, { name: 'Artemis' });
    expect(renamed).toMatchObject({ id: apollo.id, name: 'Artemis', parent_id: projects.id });

    await graphFolders.delete(grant, apollo.id);
    await expect(graphFolders.get(grant, apollo.id)).rejects.toThrow(NotFoundError);
    await expect(graphFolders.delete(grant, apollo.id)).rejects.toThrow(NotFoundError);
  });

  it('refuses what Outlook folders cannot do, saying why', async () => {
    // Prepare
    const taken = await graphFolders.create(grant, { name: 'Taken' });

    // Act
    const duplicate = graphFolders.create(grant, { name: 'taken' });

    // Assess
    await expect(duplicate).rejects.toThrow(ConflictError);
    await expect(graphFolders.create(grant, { name: 'x', background_color: '#16A766' })).rejects.toThrow(
      /have no colours/,
    );
    await expect(graphFolders.create(grant, { name: 'x', parent_id: 'AAMkADnosuchfolder=' })).rejects.toThrow(
      /'parent_id' names no folder of this grant/,
    );
    await expect(graphFolders.update(grant, taken.id, { parent_id: taken.id })).rejects.toThrow(/its own 'parent_id'/);
    await expect(graphFolders.update(grant, 'inbox', { name: 'Mine' })).rejects.toThrow(/system folder/);
    await expect(graphFolders.update(grant, fake.folderId(email, 'drafts'), { name: 'Mine' })).rejects.toThrow(
      /system folder/,
    );
    await expect(graphFolders.delete(grant, 'trash')).rejects.toThrow(InvalidRequestError);
    await expect(graphFolders.delete(grant, fake.folderId(email, 'junkemail'))).rejects.toThrow(
      `'${fake.folderId(email, 'junkemail')}' is a system folder: it cannot be deleted`,
    );
    expect((await graphFolders.get(grant, 'junkemail')).system_folder).toBe(true);
  });

  it('moves a folder under another with its ID kept, and back to the top with parent_id null', async () => {
    // Prepare
    const travel = await graphFolders.create(grant, { name: 'Travel' });
    const trips = await graphFolders.create(grant, { name: 'Trips' });

    // Act
    const under = await graphFolders.update(grant, trips.id, { parent_id: travel.id });
    const listed = await graphFolders.get(grant, trips.id);
    const top = await graphFolders.update(grant, trips.id, { parent_id: null });
    const into = await graphFolders.update(grant, travel.id, { parent_id: trips.id });
    const backInto = graphFolders.update(grant, trips.id, { parent_id: travel.id });

    // Assess
    expect(under).toMatchObject({ id: trips.id, name: 'Trips', parent_id: travel.id });
    expect(listed.parent_id).toBe(travel.id);
    expect(top.id).toBe(trips.id);
    expect(top.parent_id).toBeUndefined();
    expect(into).toMatchObject({ id: travel.id, parent_id: trips.id });
    // Trips is now under Travel's own child: Graph refuses a folder under its own subfolder.
    await expect(backInto).rejects.toThrow(InvalidRequestError);
  });

  it('pages the folders with our own cursor', async () => {
    // Act
    const first = await graphFolders.list(grant, {}, 5);
    const second = await graphFolders.list(grant, { page_token: first.nextCursor! }, 5);

    // Assess
    expect(first.items).toHaveLength(5);
    expect(second.items.map((f) => f.id)).not.toContain(first.items[0]!.id);
    await expect(graphFolders.list(grant, { page_token: 'not-ours' }, 5)).rejects.toThrow(InvalidRequestError);
  });
});
