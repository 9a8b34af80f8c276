import { consumeJobsQueue } from '#shared/jobs/dispatch';

/** The jobs worker: every job of the jobs queue, read at the queue boundary and run by kind (shared/jobs/dispatch.ts). */
export const handler = consumeJobsQueue;
