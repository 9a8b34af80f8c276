import { TransactionalMessageObject, TransactionalSendBody } from '#schemas/domains';
import type { RouteTable } from '#shared/http/route';

/** The largest JSON send; larger attachments come as multipart/form-data, as for grant sends. */
const JSON_LIMIT = 3 * 1024 * 1024;
const MULTIPART_LIMIT = 25 * 1024 * 1024;

/**
 * Transactional send: from an application's verified domain, without a grant (its own function: it
 * bundles MIME composition, DKIM signing and the mail transports, which the domain admin does not).
 */
export const routes = {
  sendTransactional: {
    method: 'POST',
    path: '/v3/domains/{domain_name}/messages/send',
    summary:
      "Send a message from an address on one of the application's verified domains, without a grant (JSON, or multipart/form-data for large attachments)",
    body: TransactionalSendBody,
    maxBodyBytes: JSON_LIMIT,
    maxBodyHint:
      "send larger messages as multipart/form-data: a 'message' part holding this JSON without the attachments, plus one file part per attachment",
    multipartMaxBytes: MULTIPART_LIMIT,
    response: TransactionalMessageObject,
    tag: 'domains',
  },
} as const satisfies RouteTable;
