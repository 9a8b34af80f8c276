import {
  CopyObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
} from '@aws-sdk/client-s3';
import { MAIL_BUCKET, s3 } from '#shared/aws/s3';

/**
 * Objects of the mail bucket, whoever keeps them there: a provider's contents (shared/mailbox/blobs.ts
 * names the Agent Account's keys), inbound mail SES staged, a send's spool for local delivery.
 */
export async function putBlob(key: string, body: Buffer | string, contentType: string): Promise<void> {
  await s3.send(new PutObjectCommand({ Bucket: MAIL_BUCKET, Key: key, Body: body, ContentType: contentType }));
}

/** Copies an object inside the bucket (S3 copies it: nothing goes through this function). */
export async function copyBlob(from: string, to: string): Promise<void> {
  await s3.send(
    new CopyObjectCommand({
      Bucket: MAIL_BUCKET,
      Key: to,
      CopySource: `${MAIL_BUCKET}/${from.split('/').map(encodeURIComponent).join('/')}`,
    }),
  );
}

export async function getBlob(key: string): Promise<Buffer> {
  const { Body } = await s3.send(new GetObjectCommand({ Bucket: MAIL_BUCKET, Key: key }));
  return Buffer.from(await Body!.transformToByteArray());
}

/** Whether an object exists. */
export async function blobExists(key: string): Promise<boolean> {
  try {
    await s3.send(new HeadObjectCommand({ Bucket: MAIL_BUCKET, Key: key }));
    return true;
  } catch (error) {
    const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
    if (e.name === 'NotFound' || e.name === 'NoSuchKey' || e.$metadata?.httpStatusCode === 404) return false;
    throw error;
  }
}

/** Deletes the named objects (absent ones are fine), 1000 per request. */
export async function deleteBlobs(keys: (string | undefined)[]): Promise<void> {
  const objects = [...new Set(keys.filter((k): k is string => !!k))].map((Key) => ({ Key }));
  for (let i = 0; i < objects.length; i += 1000) {
    await s3.send(
      new DeleteObjectsCommand({ Bucket: MAIL_BUCKET, Delete: { Objects: objects.slice(i, i + 1000), Quiet: true } }),
    );
  }
}

/** Deletes every object under a prefix, a page of 1000 at a time. */
export async function deletePrefix(prefix: string): Promise<number> {
  let deleted = 0;
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket: MAIL_BUCKET, Prefix: prefix, ContinuationToken: token }),
    );
    const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
    if (keys.length) {
      await s3.send(new DeleteObjectsCommand({ Bucket: MAIL_BUCKET, Delete: { Objects: keys, Quiet: true } }));
      deleted += keys.length;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return deleted;
}
