import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gmailFolders } from '#shared/google/folders';
import type { GrantRecord } from '#shared/db/grants';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Provider A's folders, live (shared/google/folders.ts): Gmail labels as folders against the local
 * Google fake, nested names as parents, system labels with their roles, counts from each label.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google live folders'));
});

afterAll(async () => {
  await fake?.close();
});

describe("provider A's folders, live", () => {
  it('lists the system labels as system folders with their roles and counts', async () => {
    fake.deliver(email, 'From: a@example.org\r\nSubject: One\r\n\r\nx');
    fake.deliver(email, 'From: a@example.org\r\nSubject: Two\r\n\r\ny', ['INBOX']);
    const page = await gmailFolders.list(grant, {}, 100);
    const inbox = page.items.find((f) => f.id === 'INBOX')!;
    expect(inbox).toMatchObject({
      object: 'folder',
      grant_id: grant.id,
      system_folder: true,
      attributes: ['\\Inbox'],
      total_count: 2,
      unread_count: 1,
    });
    expect(page.items.find((f) => f.id === 'SENT')?.attributes).toEqual(['\\Sent']);
    expect(page.items.find((f) => f.id === 'SPAM')?.attributes).toEqual(['\\Junk']);
  });

  it('creates nested folders as Parent/Child labels, renames, moves and deletes them', async () => {
    const projects = await gmailFolders.create(grant, {
      name: 'Projects',
      background_color: '#16A766',
      text_color: '#FFFFFF',
    });
    expect(projects).toMatchObject({
      name: 'Projects',
      system_folder: false,
      background_color: '#16a766',
      child_count: 0,
    });
    const apollo = await gmailFolders.create(grant, { name: 'Apollo', parent_id: projects.id });
    expect(apollo).toMatchObject({ name: 'Apollo', parent_id: projects.id });
    expect((await gmailFolders.get(grant, projects.id)).child_count).toBe(1);
    expect((await gmailFolders.list(grant, { parent_id: projects.id }, 100)).items.map((f) => f.id)).toEqual([
      apollo.id,
    ]);
    expect((await gmailFolders.list(grant, { single_level: true }, 100)).items.map((f) => f.id)).not.toContain(
      apollo.id,
    );

    const renamed = await gmailFolders.update(grant, apollo.id, { name: 'Artemis' });
    expect(renamed).toMatchObject({ name: 'Artemis', parent_id: projects.id });
    const top = await gmailFolders.update(grant, apollo.id, { parent_id: null });
    expect(top.name).toBe('Artemis');
    expect(top.parent_id).toBeUndefined();

    await expect(gmailFolders.create(grant, { name: 'a/b' })).rejects.toThrow(InvalidRequestError);
    await expect(gmailFolders.create(grant, { name: 'x', parent_id: 'Label_999' })).rejects.toThrow(/parent_id/);
    await expect(gmailFolders.update(grant, 'INBOX', { name: 'Mine' })).rejects.toThrow(/system folder/);
    await expect(gmailFolders.delete(grant, 'TRASH')).rejects.toThrow(/system folder/);

    await gmailFolders.delete(grant, apollo.id);
    await expect(gmailFolders.get(grant, apollo.id)).rejects.toThrow(NotFoundError);
  });

  it('pages the folders', async () => {
    const first = await gmailFolders.list(grant, {}, 5);
    expect(first.items).toHaveLength(5);
    const second = await gmailFolders.list(grant, { page_token: first.nextCursor! }, 5);
    expect(second.items.map((f) => f.id)).not.toContain(first.items[0]!.id);
  });

  it('sent nothing Gmail does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
