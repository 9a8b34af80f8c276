import type { GrantId, MessageId } from '#shared/ids';
import type { MessageTrackingOptionsView } from '#schemas/tracking';
import { trackedMessagesOf } from '#shared/tracking/records';

/**
 * `fields=include_tracking_options` on message reads: each message with the tracking settings it
 * was sent with (opens, links, thread replies, label); a message that tracks nothing (received mail,
 * a send without tracking options) shows them all off. One BatchGetItem for the whole page.
 */
export async function withTrackingOptions<V extends { id: string }>(
  grantId: GrantId,
  views: readonly V[],
): Promise<(V & { tracking_options: MessageTrackingOptionsView })[]> {
  const tracked = await trackedMessagesOf(
    grantId,
    views.map((v) => v.id as MessageId),
  );
  return views.map((view) => {
    const t = tracked.get(view.id as MessageId);
    const tracking_options: MessageTrackingOptionsView = t
      ? {
          opens: t.opens,
          links: t.links,
          thread_replies: t.thread_replies,
          ...(t.label !== undefined ? { label: t.label } : {}),
        }
      : { opens: false, links: false, thread_replies: false };
    return { ...view, tracking_options };
  });
}
