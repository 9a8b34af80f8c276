import { SendMessageBody, SendMessageResult } from '#schemas/mail';
import type { RouteTable } from '#shared/http/route';

export const JSON_LIMIT = 3 * 1024 * 1024;
export const MULTIPART_LIMIT = 25 * 1024 * 1024;
export const MULTIPART_HINT =
  "send larger messages as multipart/form-data: a 'message' part holding this JSON without the attachments, plus one file part per attachment";

/**
 * Sending, now or scheduled (its own function: it bundles MIME composition, the mail transports,
 * the template engines and the EventBridge Scheduler client). The scheduled sends, once scheduled,
 * are functions/schedules.
 */
export const routes = {
  sendMessage: {
    method: 'POST',
    path: '/v3/grants/{grant_id}/messages/send',
    summary:
      'Send a message now (200), or with send_at schedule it (202; schedule_id in data). JSON, or multipart/form-data for large attachments; honours Idempotency-Key',
    body: SendMessageBody,
    maxBodyBytes: JSON_LIMIT,
    maxBodyHint: MULTIPART_HINT,
    multipartMaxBytes: MULTIPART_LIMIT,
    response: SendMessageResult,
  },
} as const satisfies RouteTable;
