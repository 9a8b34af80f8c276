import { consumeJobsQueue } from '#shared/services/jobs';

/** The jobs worker: every job of the jobs queue, read at the queue boundary and run by kind (shared/services/jobs.ts). */
export const handler = consumeJobsQueue;
