import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { draftKey } from '#shared/db/keys';
import type { DraftId, GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import { connectImapGrant, useDovecot, withImapSession } from '../support/dovecot';
import { useApi } from '../support/harness';
import { dieAt, type DeathPoint } from '../support/process-death';
import { createTestQueue } from '../support/queues';
import { rememberSecret } from '../support/secrets';
import { syncRun as runSync } from '../support/sync-runs';

/**
 * An IMAP grant's draft send killed between its claim and its commit (shared/imap/draft-send.ts): the
 * draft is claimed right before the account's SMTP server gets the message, and deleted by the
 * transaction that stores the Sent copy. A process that dies in between (test/support/process-death.ts)
 * leaves the draft in the store and its copy in the server's Drafts folder, claimed until the claim
 * lapses (the injectable clock, never a sleep); then it sends, and both go.
 */
const { api, applicationId } = useApi();
const USER = 'faults@example.org';
const PASSWORD = 'imap draft faults test password 3';
const dovecot = useDovecot([{ user: USER, password: PASSWORD }]);

/** Past every claim's lapse (shared/mailbox/send.ts SEND_CLAIM_SECONDS: 15 minutes). */
const LAPSE_MS = 15 * 60 * 1000 + 1000;

let grant: { id: string; email: string };

beforeAll(async () => {
  rememberSecret(PASSWORD, 'the IMAP draft faults test password');
  process.env.FANOUT_QUEUE_URL = await createTestQueue('imap-draft-faults-fanout');
  process.env.MAIL_SYNC_QUEUE_URL = await createTestQueue('imap-draft-faults-sync');
  grant = await connectImapGrant(api, dovecot, USER, PASSWORD);
  // The sync finds the account's Drafts and Sent folders.
  await runSync(applicationId(), grant.id);
});

afterEach(() => vi.restoreAllMocks());

/** How many copies the server's Drafts folder holds with this subject. */
const copiesInDrafts = (subject: string) =>
  withImapSession(dovecot, USER, PASSWORD, async (client) => {
    await client.mailboxOpen('Drafts', { readOnly: true });
    return ((await client.search({ header: { subject } }, { uid: true })) || []).length;
  });

describe('an IMAP draft send killed between its claim and its commit', () => {
  it.each<DeathPoint>(['after-claim', 'at-commit'])(
    '%s: leaves the draft and its copy, sendable once the claim lapsed',
    async (point) => {
      // Prepare
      const subject = `Survives a crash ${point}`;
      const created = await api.post(`/v3/grants/${grant.id}/drafts`, {
        to: [{ email: 'dee@example.net' }],
        subject,
        body: '<p>still here</p>',
      });
      expect(created.status, created.text).toBe(200);
      const draftId = created.body.data.id as string;
      const died = dieAt(point, grant.id, draftKey(grant.id as GrantId, draftId as DraftId));

      // Act: the send dies.
      const killed = await api.post(`/v3/grants/${grant.id}/drafts/${draftId}`, {});
      vi.restoreAllMocks();

      // Assess: the draft is where it was, in the store and on the server; nothing was put back.
      expect(died()).toBe(true);
      expect(killed.status, killed.text).toBe(500);
      const kept = await api.get(`/v3/grants/${grant.id}/drafts/${draftId}`);
      expect(kept.status, kept.text).toBe(200);
      expect(kept.body.data).toMatchObject({ id: draftId, subject });
      expect(await copiesInDrafts(subject)).toBe(1);
      expect((await api.post(`/v3/grants/${grant.id}/drafts/${draftId}`, {})).status).toBe(404);

      // Once the claim lapsed, it sends: gone from the store and from the server's Drafts.
      const restoreClock = clock.set(() => Date.now() + LAPSE_MS);
      try {
        const sent = await api.post(`/v3/grants/${grant.id}/drafts/${draftId}`, {});
        expect(sent.status, sent.text).toBe(200);
        expect(sent.body.data).toMatchObject({ object: 'message', subject, folders: ['sent'] });
        expect((await api.get(`/v3/grants/${grant.id}/drafts/${draftId}`)).status).toBe(404);
        expect(await copiesInDrafts(subject)).toBe(0);
      } finally {
        restoreClock();
      }
    },
  );
});
