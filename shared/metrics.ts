import { Metrics, MetricUnit } from '@aws-lambda-powertools/metrics';

/**
 * Metrics through Powertools for AWS Lambda's Metrics: CloudWatch's embedded metric format (EMF),
 * one JSON line on stdout per emission, which CloudWatch Logs turns into metrics without a call of
 * ours. Namespace `Switchboard` (POWERTOOLS_METRICS_NAMESPACE), every metric with the dimension
 * `service` (POWERTOOLS_SERVICE_NAME, `switchboard`) and those its emission names. The names are
 * the ones the template's alarms and dashboard read (scripts/infra/): change both together.
 * POWERTOOLS_METRICS_DISABLED=true turns them off (npm start does, to keep its terminal readable).
 */
export const METRICS = {
  /** Per route (`route`: `GET /v3/grants/{grant_id}`): every request, its 4xx and 5xx, its latency. */
  requests: 'Requests',
  clientErrors: 'ClientErrors',
  serverErrors: 'ServerErrors',
  latency: 'Latency',
  /** Requests refused by the per-application or per-grant rate limit. */
  rateLimited: 'RateLimited',
  /** Webhook deliveries: sent (2xx), retried later, given up (dead-lettered). */
  deliveries: 'Deliveries',
  deliveryRetries: 'DeliveryRetries',
  deliveryDeadLettered: 'DeliveryDeadLettered',
  /** Per provider (`provider`): sync runs, pushes received, cursors that had expired and were taken anew. */
  syncRuns: 'SyncRuns',
  pushArrivals: 'PushArrivals',
  cursorResets: 'CursorResets',
  /** Per provider: runs of grants whose push (watch, channel, subscription) has lapsed or was refused. */
  pushLapsed: 'PushLapsed',
  /** How late a scheduled send left, from its `send_at`. */
  scheduledSendLateness: 'ScheduledSendLateness',
} as const;

export { MetricUnit };
type Unit = (typeof MetricUnit)[keyof typeof MetricUnit];

const metrics = new Metrics({
  namespace: process.env.POWERTOOLS_METRICS_NAMESPACE || 'Switchboard',
  serviceName: process.env.POWERTOOLS_SERVICE_NAME || 'switchboard',
});

/**
 * Emits one EMF line: `values` under `dimensions` (besides `service`). Synchronous from the first
 * dimension to the line written, so concurrent requests of one process never mix their dimensions.
 */
export function emitMetrics(
  dimensions: Record<string, string>,
  values: readonly (readonly [name: (typeof METRICS)[keyof typeof METRICS], unit: Unit, value: number])[],
): void {
  if (!values.length) return;
  try {
    if (Object.keys(dimensions).length) metrics.addDimensions(dimensions);
    for (const [name, unit, value] of values) metrics.addMetric(name, unit, value);
    metrics.publishStoredMetrics();
  } catch {
    // A metric is never worth a failed request: drop this emission, keep the buffer clean.
    metrics.clearMetrics();
    metrics.clearDimensions();
  }
}

/** One count. */
export const countMetric = (
  name: (typeof METRICS)[keyof typeof METRICS],
  dimensions: Record<string, string> = {},
  value = 1,
) => emitMetrics(dimensions, [[name, MetricUnit.Count, value]]);
