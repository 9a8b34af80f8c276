import * as agent from '#shared/agent/attachments';
import type { GrantRecord, Provider } from '#shared/db/grants';
import { providerOf } from '#shared/providers/mailbox';

export interface AttachmentsProvider {
  get: typeof agent.getAttachment;
  download: typeof agent.downloadAttachment;
}

const registry: Partial<Record<Provider, AttachmentsProvider>> = { agent: { get: agent.getAttachment, download: agent.downloadAttachment } };

export const attachmentsOf = (grant: GrantRecord) => providerOf(registry, grant, 'Attachments');
