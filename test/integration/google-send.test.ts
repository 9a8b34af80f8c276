import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gmailScheduledSending, gmailSend } from '#shared/google/send';
import { getSchedule } from '#shared/db/schedules';
import type { GrantId, ScheduleId } from '#shared/ids';
import { clock } from '#shared/time';
import { gmailMessages } from '#shared/google/messages';
import type { GrantRecord } from '#shared/db/grants';
import { ConflictError, NotFoundError } from '#shared/errors';
import { uniqueEmail } from '../support/factories';
import { startGoogleFake, type GoogleFake } from '../../scripts/local-stack/google/server';
import { connectFakeGoogleGrant } from '../support/google';

/**
 * Sending from provider A, live (shared/google/send.ts), against the local Google fake: composed as
 * every send is, handed to Gmail's messages.send (which keeps the Sent copy and delivers it to the
 * fake's other users), replies threaded by the answered message's Gmail thread, Idempotency-Key replays.
 */
let fake: GoogleFake;
let grant: GrantRecord;
let email: string;
const bob = uniqueEmail('bob');

beforeAll(async () => {
  fake = await startGoogleFake();
  ({ grant, email } = await connectFakeGoogleGrant(fake, 'google live send'));
  fake.addUser({ email: bob, accessToken: `token-of-${bob}` });
});

afterAll(async () => {
  await fake?.close();
});

const context = (idempotencyKey?: string) => ({
  files: [],
  requestId: 'req-test',
  ...(idempotencyKey ? { idempotencyKey } : {}),
});

async function inboxOf(address: string): Promise<{ subject: string; from: string }[]> {
  const list = await fetch(`${fake.url}/gmail/v1/users/me/messages?labelIds=INBOX`, {
    headers: { authorization: `Bearer token-of-${address}` },
  }).then((r) => r.json() as Promise<{ messages?: { id: string }[] }>);
  return Promise.all(
    (list.messages ?? []).map(async ({ id }) => {
      const m = (await fetch(
        `${fake.url}/gmail/v1/users/me/messages/${id}?format=metadata&metadataHeaders=Subject&metadataHeaders=From`,
        { headers: { authorization: `Bearer token-of-${address}` } },
      ).then((r) => r.json())) as { payload: { headers: { name: string; value: string }[] } };
      const h = (n: string) => m.payload.headers.find((x) => x.name === n)?.value ?? '';
      return { subject: h('Subject'), from: h('From') };
    }),
  );
}

describe('sending from provider A, live', () => {
  it('sends through Gmail: the answer is the Sent copy, the recipient gets it', async () => {
    const { result, replayed, scheduled } = await gmailSend.send(
      grant,
      {
        to: [{ email: bob, name: 'Bob' }],
        subject: 'Hello from the API',
        body: '<p>Hi Bob</p>',
        attachments: [
          { filename: 'note.txt', content_type: 'text/plain', content: Buffer.from('a note').toString('base64') },
        ],
      },
      context(),
    );
    expect({ replayed, scheduled }).toEqual({ replayed: false, scheduled: false });
    expect(result).toMatchObject({
      object: 'message',
      grant_id: grant.id,
      subject: 'Hello from the API',
      to: [{ email: bob, name: 'Bob' }],
      from: [{ email }],
    });
    expect((result as { folders: string[] }).folders).toContain('SENT');
    expect((result as { attachments: { filename: string }[] }).attachments.map((a) => a.filename)).toEqual([
      'note.txt',
    ]);
    expect(await inboxOf(bob)).toContainEqual({ subject: 'Hello from the API', from: email });
  });

  it("threads a reply with the message it answers, in Gmail's thread", async () => {
    const original = fake.deliver(
      email,
      `From: ${bob}\r\nTo: ${email}\r\nSubject: Question\r\nMessage-ID: <question@example.org>\r\n\r\nAre you in?`,
    );
    const { result } = await gmailSend.send(
      grant,
      { to: [{ email: bob }], subject: 'Re: Question', body: 'Yes', reply_to_message_id: original.id },
      context(),
    );
    expect(result.thread_id).toBe(original.threadId);
    const full = await gmailMessages.get(grant, result.id, { fields: 'include_headers' });
    expect(full.headers).toContainEqual({ name: 'In-Reply-To', value: '<question@example.org>' });
    await expect(
      gmailSend.send(grant, { to: [{ email: bob }], body: 'x', reply_to_message_id: 'ffffffffffffffff' }, context()),
    ).rejects.toThrow(NotFoundError);
  });

  it('sends once per Idempotency-Key: the same request replays, another is a 409', async () => {
    const body = { to: [{ email: bob }], subject: 'Once only', body: 'One copy' };
    const first = await gmailSend.send(grant, body, context('key-once-1'));
    const again = await gmailSend.send(grant, body, context('key-once-1'));
    expect(again).toMatchObject({ replayed: true });
    expect(again.result.id).toBe(first.result.id);
    expect((await inboxOf(bob)).filter((m) => m.subject === 'Once only')).toHaveLength(1);
    await expect(gmailSend.send(grant, { ...body, body: 'Other' }, context('key-once-1'))).rejects.toThrow(
      ConflictError,
    );
  });

  it('schedules with send_at, and sends through Gmail when the schedule is due', async () => {
    const { result, scheduled } = await gmailSend.send(
      grant,
      { to: [{ email: bob }], subject: 'Later on', body: 'When due', send_at: clock.nowSeconds() + 3600 },
      context(),
    );
    expect(scheduled).toBe(true);
    expect((await inboxOf(bob)).map((m) => m.subject)).not.toContain('Later on');
    const scheduleId = (result as { schedule_id: string }).schedule_id;
    const record = (await getSchedule(grant.id as GrantId, scheduleId as ScheduleId))!;
    let relayed = false;
    const { messageId } = await gmailScheduledSending.send(grant, record, {
      beforeRelay: async () => void (relayed = true),
      scheduleItems: () => [],
    });
    expect(relayed).toBe(true);
    expect(await inboxOf(bob)).toContainEqual({ subject: 'Later on', from: email });
    expect((await gmailMessages.get(grant, messageId, {})).folders).toContain('SENT');
  });

  it('sent nothing Gmail does not describe, and the fake answered nothing it does not', () => {
    expect(fake.requestViolations).toEqual([]);
    expect(fake.responseViolations).toEqual([]);
  });
});
