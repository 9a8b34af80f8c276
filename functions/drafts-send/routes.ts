import { MessageObject, SendDraftBody } from '#schemas/mail';
import type { RouteTable } from '#shared/http/route';

/**
 * Sending a draft: a function of its own, apart from functions/drafts, because it alone bundles MIME
 * composition and the mail transports (nodemailer, SES), which storing drafts never runs.
 */
export const routes = {
  sendDraft: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/drafts/{draft_id}',
    summary: 'Send a draft as a message (optional signature_id appends a signature); the draft is deleted',
    body: SendDraftBody,
    bodyOptional: true,
    response: MessageObject,
    tag: 'drafts',
  },
} as const satisfies RouteTable;
