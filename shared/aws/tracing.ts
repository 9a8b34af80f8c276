import type { Tracer } from '@aws-lambda-powertools/tracer';
import * as lazy from '#shared/lazy/tracer';

/**
 * X-Ray traces through Powertools for AWS Lambda's Tracer, when the deployment turns them on
 * (`POWERTOOLS_TRACE_ENABLED=true` with Lambda's active tracing: the template's `tracing`
 * parameter). Then every AWS SDK client is captured (each call a subsegment) and each provider HTTP
 * call (IMAP/SMTP aside: REST and OAuth) is a subsegment named after its host. Off, nothing of the
 * Tracer or the X-Ray SDK is loaded (a lazy chunk: it would cost every cold start), and these
 * helpers hand back what they were given.
 */
let tracer: Tracer | null | undefined;

/** The Tracer, made on first use when tracing is on. */
export function activeTracer(): Tracer | undefined {
  if (tracer === undefined)
    tracer =
      process.env.POWERTOOLS_TRACE_ENABLED === 'true'
        ? new lazy.Tracer({ serviceName: process.env.POWERTOOLS_SERVICE_NAME || 'switchboard' })
        : null;
  return tracer ?? undefined;
}

/** An AWS SDK client whose calls are traced (when tracing is on). */
export function traced<T>(client: T): T {
  return activeTracer()?.captureAWSv3Client(client) ?? client;
}

/** Runs `work` as a subsegment `name` of the invocation's segment (when tracing is on and there is one). */
export async function inSubsegment<T>(name: string, work: () => Promise<T>): Promise<T> {
  const segment = activeTracer()?.getSegment();
  if (!segment) return work();
  const sub = segment.addNewSubsegment(name);
  try {
    return await work();
  } catch (error) {
    sub.addError(error as Error);
    throw error;
  } finally {
    sub.close();
  }
}
