import { createServer } from 'node:http';
import S3rver from 's3rver';
import { httpService, type RunningService } from './service';

/**
 * S3 emulator (npm s3rver 3.7.1), in this process, storing objects as files under `directory`.
 *
 * Pitfalls: s3rver only knows the credentials `S3RVER` / `S3RVER` (any other access key id is
 * answered with InvalidAccessKeyId; V4 signatures themselves are not checked), and clients must
 * use path-style addressing (`forcePathStyle: true`).
 *
 * We serve s3rver's request handler from our own loopback server instead of calling `run()`:
 * s3rver's listen() has no 'error' listener, so a taken port would crash the process instead of
 * rejecting here.
 */
export async function startS3Local(options: {
  port: number;
  host?: string;
  directory: string;
  buckets: string[];
}): Promise<RunningService> {
  const host = options.host ?? '127.0.0.1';
  const s3 = new S3rver({
    silent: true,
    directory: options.directory,
    // Path-style only: never treat the Host header as a bucket name.
    vhostBuckets: false,
    configureBuckets: options.buckets.map((name) => ({ name })),
  });
  await s3.configureBuckets();

  const server = createServer(s3.getMiddleware());
  // Stopping removes nothing: the caller owns `directory`.
  return httpService(server, options.port, host);
}
