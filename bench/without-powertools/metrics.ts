/**
 * The foundation bench's "without Powertools" build (bench/foundation.ts): what shared/metrics.ts
 * uses of @aws-lambda-powertools/metrics, doing nothing (before Powertools there were no metrics),
 * so that the bundles built with it measure what Powertools' Metrics costs a cold start. Never part
 * of a deployed bundle.
 */
export const MetricUnit = { Count: 'Count', Milliseconds: 'Milliseconds' } as const;

export class Metrics {
  constructor(_options: { namespace: string; serviceName: string }) {}
  addDimensions(_dimensions: Record<string, string>): void {}
  addMetric(_name: string, _unit: string, _value: number): void {}
  publishStoredMetrics(): void {}
  clearMetrics(): void {}
  clearDimensions(): void {}
}
