/**
 * The part of s3rver 3.7.1 (which ships no types) that s3-local.ts uses. Declared inside the
 * module block so this file stays a global declaration rather than an augmentation.
 */
declare module 's3rver' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface S3rverOptions {
    address?: string;
    port?: number;
    silent?: boolean;
    directory?: string;
    resetOnClose?: boolean;
    allowMismatchedSignatures?: boolean;
    vhostBuckets?: boolean;
    serviceEndpoint?: string;
    configureBuckets?: Array<{ name: string; configs?: Array<string | Buffer> }>;
  }

  class S3rver {
    constructor(options?: S3rverOptions);
    /** Creates the `configureBuckets` buckets in the store (run() does this before listening). */
    configureBuckets(): Promise<unknown>;
    /** The Koa request handler, for mounting on a server of one's own. */
    getMiddleware(): (req: IncomingMessage, res: ServerResponse) => void;
    reset(): void;
  }

  export = S3rver;
}
