import { drainQueue, messagesIn } from './queues';
import { jobsDone } from './outbox-relay';

/** A notification as the fan-out queue carries it. */
export interface GrantNotification {
  type: string;
  data: { grant_id: string; object: Record<string, any> };
}

/**
 * One sync run of a grant whose data lives on other servers (IMAP, CalDAV, CardDAV), as the mail-sync
 * worker runs it (with `remainingMs` of its function's time), then the jobs its changes committed.
 */
export async function syncRun(
  applicationId: string,
  grantId: string,
  remainingMs: () => number = () => 300_000,
): Promise<void> {
  const { runMailSync } = await import('#shared/services/mail-sync');
  await runMailSync({ application_id: applicationId, grant_id: grantId }, remainingMs);
  await jobsDone();
}

/** Notifications published for the grant since the last call (the file's fan-out queue drained). */
export async function grantNotifications(fanout: string, grantId: string): Promise<GrantNotification[]> {
  await jobsDone();
  return (await drainQueue(fanout, await messagesIn(fanout), 10_000))
    .map((m) => m.body as GrantNotification)
    .filter((n) => n.data.grant_id === grantId);
}
