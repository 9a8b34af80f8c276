import { describe, expect, it } from 'vitest';
import { LOOPBACK_LISTENERS, listeners } from '../support/listeners';

/**
 * The emulators the test setup started (the same `startLocalStack` as `npm start`) listen on
 * loopback only. Read from the kernel's socket tables: no connection to any other address is made.
 */
describe.runIf(process.platform === 'linux' && !process.env.AWS_ENDPOINT_URL)('local emulators', () => {
  it.each([
    'AWS_ENDPOINT_URL_DYNAMODB',
    'AWS_ENDPOINT_URL_SQS',
    'AWS_ENDPOINT_URL_S3',
    'AWS_ENDPOINT_URL_SECRETS_MANAGER',
    'SMTP_SINK_URL',
    'SMTP_RELAY_URL',
  ])('%s listens on loopback only', (name) => {
    const port = Number(new URL(process.env[name]!).port);
    const addresses = listeners(port);
    expect(addresses.length, `${name} (port ${port}) is listening`).toBeGreaterThan(0);
    expect(
      addresses.filter((a) => !LOOPBACK_LISTENERS.includes(a)),
      `${name} also listens on`,
    ).toEqual([]);
  });
});
