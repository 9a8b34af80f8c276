import { outboxDrained } from './outbox-relay';
import { messagesIn } from './queues';

/**
 * Resolves once this test file's notification pipeline has nothing left to do: every outbox entry
 * committed before the call has been published, and then each queue, read in order from upstream
 * (fan-out) to downstream (delivery), holds no message at all: none waiting, in flight or delayed.
 *
 * Why that proves "nothing more will arrive": a queue worker (./sqs-worker.ts, like Lambda's event
 * source mapping) deletes a message only after its handler returned, and the handler has by then
 * enqueued everything that follows from it, downstream or, for a retry, on its own queue. So when an
 * upstream queue reads empty, all it produced is already downstream, and an empty downstream read
 * after it means no POST is pending, under way or scheduled for later. Tests assert absence after
 * this (and after a sentinel that shows the pipeline does deliver), never after a fixed sleep.
 *
 * The deadline only turns a hang into a failure; a scheduled retry is waited for, not cut short.
 */
export async function pipelineIdle(queues: readonly string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await outboxDrained();
    let busy: { queue: string; messages: number } | undefined;
    for (const queue of queues) {
      const messages = await messagesIn(queue);
      if (messages > 0) {
        busy = { queue, messages };
        break;
      }
    }
    if (!busy) return;
    if (Date.now() > deadline)
      throw new Error(`pipelineIdle: ${busy.queue} still holds ${busy.messages} message(s) after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
