import { getThread, requireThread } from '#shared/mailbox/threads';
import { threadMessageIds } from '#shared/mailbox/thread-refresh';
import type { GrantRecord } from '#shared/db/grants';
import { deleteImapMessage, updateImapMessage } from '#shared/imap/messages';
import type { ThreadsProvider } from '#shared/providers/contract';
import type { UpdateThreadBody } from '#schemas/mail';

/** Threads of an IMAP grant: read from the synced store; a thread's changes are its messages' changes, each written to the server first. */

async function updateImapThread(grant: GrantRecord, threadId: string, body: UpdateThreadBody) {
  const thread = await requireThread(grant, threadId);
  for (const id of await threadMessageIds(grant.id, thread.id))
    await updateImapMessage(grant, id, body as Parameters<typeof updateImapMessage>[2]);
  return getThread(grant, threadId);
}

async function deleteImapThread(grant: GrantRecord, threadId: string): Promise<void> {
  const thread = await requireThread(grant, threadId);
  for (const id of await threadMessageIds(grant.id, thread.id)) await deleteImapMessage(grant, id, {});
}

export const imapThreadWrites: Pick<ThreadsProvider, 'update' | 'delete'> = {
  update: updateImapThread,
  delete: deleteImapThread,
};
