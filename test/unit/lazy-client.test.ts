import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it, vi } from 'vitest';
import { lazyClient } from '#shared/aws/lazy-client';

/**
 * An AWS SDK client made on first use (shared/aws/lazy-client.ts): nothing is constructed until a
 * property is read, then one client serves every use, and it stands for the client in every way
 * that callers and tests use one (send, spies, mocks of the class, instanceof).
 */
describe('a client made on first use', () => {
  it('is made once, at the first use, never at import', () => {
    const make = vi.fn(() => new S3Client({ region: 'us-east-1' }));
    const s3 = lazyClient(make);
    expect(make).not.toHaveBeenCalled();
    void s3.config;
    void s3.middlewareStack;
    expect(make).toHaveBeenCalledTimes(1);
    expect(s3).toBeInstanceOf(S3Client);
  });

  it('sends through the class mock, and a spy on its send sees the calls', async () => {
    const mock = mockClient(S3Client);
    mock.on(GetObjectCommand).resolves({ ContentType: 'text/plain' });
    const s3 = lazyClient(() => new S3Client({ region: 'us-east-1' }));
    const spy = vi.spyOn(s3, 'send');
    const answer = await s3.send(new GetObjectCommand({ Bucket: 'b', Key: 'k' }));
    expect(answer.ContentType).toBe('text/plain');
    expect(spy).toHaveBeenCalledTimes(1);
    spy.mockRestore();
    mock.restore();
  });
});
