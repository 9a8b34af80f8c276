import { S3Client } from '@aws-sdk/client-s3';
import { requestHandler } from '#shared/aws/http';
import { env } from '#shared/config';
import { lazyClient } from '#shared/aws/lazy-client';
import { traced } from '#shared/aws/tracing';

/**
 * One S3 client per container, made on first use (shared/aws/lazy-client.ts). `S3_FORCE_PATH_STYLE=true`
 * is configuration for S3-compatible endpoints (the local emulator, LocalStack) that cannot serve
 * virtual-hosted bucket names.
 */
export const s3 = lazyClient(() => traced(new S3Client({ requestHandler, forcePathStyle: env.s3ForcePathStyle() })));

export const MAIL_BUCKET = env.mailBucket();
