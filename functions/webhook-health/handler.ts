import { logger } from '#shared/logger';
import { evaluateHealth } from '#shared/webhooks/health';

/** Scheduled (EventBridge, every 5 minutes; `npm start` invokes it every minute): webhook health. */
export const handler = async (): Promise<{ changes: number }> => {
  const changes = await evaluateHealth();
  for (const change of changes) logger.info('webhook status changed', { ...change });
  return { changes: changes.length };
};
