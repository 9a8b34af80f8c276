import { consumeOutbox } from '#shared/outbox/consumer';

/** The outbox consumer (the table's stream → the fan-out and jobs queues): shared/outbox/consumer.ts. */
export const handler = consumeOutbox;
