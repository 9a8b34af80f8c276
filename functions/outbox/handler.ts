import { consumeOutbox } from '#shared/services/outbox';

/** The outbox consumer (the table's stream → the fan-out and jobs queues): shared/services/outbox.ts. */
export const handler = consumeOutbox;
