import type { NewMessage } from '#shared/mailbox/store';
import { getGrant, type GrantRecord } from '#shared/db/grants';
import { newId, type ApplicationId, type GrantId } from '#shared/ids';
import { clock } from '#shared/time';
import type { ApiClient } from './api';
import { makeAgentGrant } from './factories';

/**
 * Mail stored straight into an Agent Account mailbox, for tests of the stored mailbox below the
 * HTTP layer (search index, one-character keywords): a new mailbox's grant record, and an inbound
 * mail as ingest hands it to the store (shared/agent/ingest.ts).
 */

/** A new Agent Account of the application `api` calls as, as its stored grant record. */
export async function storedMailbox(api: ApiClient, applicationId: string): Promise<GrantRecord> {
  const view = await makeAgentGrant(api);
  return (await getGrant(applicationId as ApplicationId, view.id as GrantId))!;
}

/** An inbound mail to `grant`, in its inbox, unread, plain text; `extra` overrides any field. */
export function inboundMail(
  grant: GrantRecord,
  subject: string,
  body: string,
  extra: Partial<NewMessage> = {},
): NewMessage {
  const messageIdHeader = `<${newId('message')}@example.net>`;
  return {
    grant,
    subject,
    from: [{ email: 'ann@example.net', name: 'Ann' }],
    to: [{ email: grant.email }],
    cc: [],
    bcc: [],
    replyTo: [],
    date: clock.nowSeconds(),
    unread: true,
    starred: false,
    folders: ['inbox'],
    body,
    isPlaintext: true,
    attachments: [],
    headers: [{ name: 'Message-ID', value: messageIdHeader }],
    raw: Buffer.from(`Message-ID: ${messageIdHeader}\r\nSubject: ${subject}\r\n\r\n${body}`),
    metadata: {},
    messageIdHeader,
    references: [],
    ...extra,
  };
}
