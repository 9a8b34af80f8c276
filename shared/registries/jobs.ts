import { agentJobs } from '#shared/mailbox/jobs';
import type { ProviderJob, ProviderJobs } from '#shared/providers/contract';

/**
 * Jobs that a provider's own storage commits with its changes (thread refreshes, index merges,
 * purges of its data): each kind belongs to one provider, which runs it. The jobs worker's dispatch
 * (shared/services/jobs.ts) hands these kinds here and runs the others itself.
 */
const registry: ProviderJobs = { ...agentJobs };

export function runProviderJob(job: ProviderJob, outOfTime: () => boolean): Promise<'done' | 'more'> {
  const run = registry[job.kind] as (job: ProviderJob, outOfTime: () => boolean) => Promise<'done' | 'more'>;
  return run(job, outOfTime);
}
