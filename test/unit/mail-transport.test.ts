import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import { mockClient } from 'aws-sdk-client-mock';
import { beforeEach, describe, expect, it, vi } from 'vitest';

const sesMock = mockClient(SESv2Client);

/**
 * The transport module reads MAIL_TRANSPORT at load: import it fresh with the SES setting, then
 * restore the previous value (or its absence) for whatever runs next.
 */
async function sesTransport() {
  vi.resetModules();
  const previous = process.env.MAIL_TRANSPORT;
  process.env.MAIL_TRANSPORT = 'ses';
  try {
    return await import('#shared/mail/transport');
  } finally {
    if (previous === undefined) delete process.env.MAIL_TRANSPORT;
    else process.env.MAIL_TRANSPORT = previous;
  }
}

describe('Function: mailTransport (ses)', () => {
  beforeEach(() => sesMock.reset());

  it('sends the raw MIME through SES v2 with the envelope recipients', async () => {
    // Prepare
    sesMock.on(SendEmailCommand).resolves({ MessageId: 'ses-1' });
    const { mailTransport } = await sesTransport();
    const raw = Buffer.from('From: a@x.io\r\nTo: b@y.io\r\nSubject: hi\r\n\r\nbody');

    // Act
    const result = await mailTransport().send(raw, { from: 'a@x.io', to: ['b@y.io', 'c@z.io'] });

    // Assess
    expect(result.response).toBe('ses-1');
    const calls = sesMock.commandCalls(SendEmailCommand);
    expect(calls).toHaveLength(1);
    expect(calls[0]!.args[0].input).toEqual({
      FromEmailAddress: 'a@x.io',
      Destination: { ToAddresses: ['b@y.io', 'c@z.io'] },
      Content: { Raw: { Data: raw } },
    });
  });

  it('turns an SES refusal into a DeliveryError', async () => {
    sesMock.on(SendEmailCommand).rejects(new Error('Email address is not verified'));
    const { mailTransport, DeliveryError } = await sesTransport();
    await expect(mailTransport().send(Buffer.from('x'), { from: 'a@x.io', to: ['b@y.io'] })).rejects.toBeInstanceOf(
      DeliveryError,
    );
    await expect(mailTransport().send(Buffer.from('x'), { from: 'a@x.io', to: ['b@y.io'] })).rejects.toThrow(
      'not verified',
    );
  });
});
