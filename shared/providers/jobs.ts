import { agentJobs } from '#shared/agent/jobs';
import type { Job } from '#shared/jobs/job';

/**
 * Jobs that a provider's own storage commits with its changes (thread refreshes, index merges,
 * purges of its data): each kind belongs to one provider, which runs it. The jobs worker's dispatch
 * (shared/jobs/dispatch.ts) hands these kinds here and runs the others itself.
 */
export type ProviderJobKind = 'refresh-thread' | 'message-stored' | 'merge-search' | 'index-message' | 'remove-contents' | 'purge-calendar';
export type ProviderJob = Extract<Job, { kind: ProviderJobKind }>;

/** `'more'`: the run stopped early (`outOfTime`) and the job must run again. */
export type ProviderJobs = { [K in ProviderJobKind]: (job: Extract<Job, { kind: K }>, outOfTime: () => boolean) => Promise<'done' | 'more'> };

const registry: ProviderJobs = { ...agentJobs };

export function runProviderJob(job: ProviderJob, outOfTime: () => boolean): Promise<'done' | 'more'> {
  const run = registry[job.kind] as (job: ProviderJob, outOfTime: () => boolean) => Promise<'done' | 'more'>;
  return run(job, outOfTime);
}
