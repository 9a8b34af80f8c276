import type { Tracer } from '@aws-lambda-powertools/tracer';

/**
 * X-Ray traces through Powertools for AWS Lambda's Tracer, when the deployment turns them on
 * (`POWERTOOLS_TRACE_ENABLED=true` with Lambda's active tracing: the template's `tracing`
 * parameter). Then every AWS SDK client is captured (each call a subsegment) and each provider HTTP
 * call (IMAP/SMTP aside: REST and OAuth) is a subsegment named after its host. Off, nothing of the
 * Tracer or the X-Ray SDK is loaded, in a bundle (a lazy chunk) or not (tests, benches): besides
 * its cold start, the X-Ray SDK turns on async hooks that track every promise of the process.
 * On, it is loaded as the module loads; a client made before it is ready is captured once it is.
 */
const enabled = process.env.POWERTOOLS_TRACE_ENABLED === 'true';
let tracer: Tracer | undefined;
const uncaptured: object[] = [];

const ready: Promise<Tracer> | undefined = enabled
  ? import('#shared/lazy/tracer').then(({ Tracer }) => {
      const made = new Tracer({ serviceName: process.env.POWERTOOLS_SERVICE_NAME || 'switchboard' });
      for (const client of uncaptured.splice(0)) made.captureAWSv3Client(client);
      return (tracer = made);
    })
  : undefined;
// Awaited by the first subsegment; a failure to load is that call's, never an unhandled rejection.
ready?.catch(() => undefined);

/** An AWS SDK client whose calls are traced (when tracing is on). */
export function traced<T>(client: T): T {
  if (!enabled) return client;
  if (tracer) return tracer.captureAWSv3Client(client);
  uncaptured.push(client as object);
  return client;
}

/** Runs `work` as a subsegment `name` of the invocation's segment (when tracing is on and there is one). */
export async function inSubsegment<T>(name: string, work: () => Promise<T>): Promise<T> {
  const segment = ready && (await ready).getSegment();
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
