import { binary, ok, redirect } from '#shared/http/route';
import { httpApi } from '#shared/http/stack';
import { attachmentsOf } from '#shared/registries/attachments';
import { completeAttachmentUpload, createAttachmentUpload } from '#shared/uploads/attachments';
import generated from './routes.generated.cjs';
import type { routes } from './routes';

export const handler = httpApi<typeof routes>(generated, {
  getAttachment: async ({ grant, params, query }) =>
    ok(await attachmentsOf(grant).get(grant, params.attachment_id, query.message_id)),
  downloadAttachment: async ({ grant, params, query }) => {
    const result = await attachmentsOf(grant).download(grant, params.attachment_id, query.message_id);
    return result.kind === 'redirect'
      ? redirect(result.url)
      : binary(result.content, result.attachment.content_type, result.attachment.filename);
  },
  createAttachmentUpload: async ({ grant, body }) => ok(await createAttachmentUpload(grant, body)),
  completeAttachmentUpload: async ({ grant, params }) =>
    ok(await completeAttachmentUpload(grant, params.attachment_id)),
});
