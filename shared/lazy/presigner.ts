/** Lazy module (see scripts/esbuild-plugins.cjs, lazy-chunks): S3's URL presigner, for shared/mailbox/blobs.ts (download links). */
export { getSignedUrl } from '@aws-sdk/s3-request-presigner';
