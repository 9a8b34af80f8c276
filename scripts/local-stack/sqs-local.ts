import type { AddressInfo } from 'node:net';
import { createSqsServer } from 'local-aws-sqs';
import type { RunningService } from './dynamodb-local';

/** SQS emulator (npm local-aws-sqs), in this process; speaks both SQS protocols the SDK uses. */
export async function startSqsLocal(options: { port: number; host?: string }): Promise<RunningService> {
  const host = options.host ?? '127.0.0.1';
  const server = await createSqsServer({ port: options.port, hostname: host, emulateQueueCreationLifecycle: false });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://${host}:${port}`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
