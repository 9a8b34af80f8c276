/**
 * Background work that must not hold up a request goes through the jobs queue (SQS with a DLQ) to
 * the `jobs` worker. Jobs are a tagged union, described and typed by their schema (schemas/queues.ts:
 * what each kind does is said there), validated where the worker reads them (shared/jobs/payloads.ts)
 * and handled by an exhaustive switch (shared/services/jobs.ts). They must be idempotent: SQS
 * delivers at least once, and a job committed through the outbox may be sent more than once.
 */
export type { Job, JobKind } from '#schemas/queues';
