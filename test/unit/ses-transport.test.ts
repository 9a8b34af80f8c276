import { SESv2Client, SendEmailCommand } from '@aws-sdk/client-sesv2';
import { mockClient } from 'aws-sdk-client-mock';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';

const sesMock = mockClient(SESv2Client);

/**
 * The transport reads MAIL_TRANSPORT and SES_CONFIGURATION_SET at load: import it fresh with these
 * settings, then restore the previous values (or their absence) for whatever runs next.
 */
async function transportWith(settings: Record<string, string | undefined>) {
  vi.resetModules();
  const previous = Object.fromEntries(Object.keys(settings).map((name) => [name, process.env[name]]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values))
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
  };
  set(settings);
  try {
    return await import('#shared/mail/transport');
  } finally {
    set(previous);
  }
}
const sesTransport = (configurationSet: string | undefined) =>
  transportWith({ MAIL_TRANSPORT: 'ses', SES_CONFIGURATION_SET: configurationSet });

const raw = Buffer.from('From: a@x.io\r\nTo: b@y.io\r\nSubject: hi\r\n\r\nbody');
const envelope = { from: 'a@x.io', to: ['b@y.io', 'c@z.io'] };
const tags = {
  application: 'app_01jd6xq7m9k2v3w4x5y6z7a8b9',
  grant: 'grant_01jd6xq7m9k2v3w4x5y6z7a8c0',
  message: 'msg_01jd6xq7m9k2v3w4x5y6z7a8c1',
};

describe('Function: mailTransport (ses) deliverability tags', () => {
  beforeEach(() => sesMock.reset());

  it('names the configuration set and tags the message with who sent it', async () => {
    // Prepare
    sesMock.on(SendEmailCommand).resolves({ MessageId: 'ses-1' });
    const { mailTransport } = await sesTransport('switchboard-prod');

    // Act
    const answer = await mailTransport().send(raw, envelope, tags);

    // Assess
    expect(answer).toEqual({ response: 'ses-1', accepted: envelope.to, rejected: [] });
    const [call] = sesMock.commandCalls(SendEmailCommand);
    expect(call!.args[0].input).toEqual({
      FromEmailAddress: 'a@x.io',
      Destination: { ToAddresses: envelope.to },
      Content: { Raw: { Data: raw } },
      ConfigurationSetName: 'switchboard-prod',
      EmailTags: [
        { Name: 'switchboard_application', Value: tags.application },
        { Name: 'switchboard_grant', Value: tags.grant },
        { Name: 'switchboard_message', Value: tags.message },
      ],
    });
  });

  it('tags a transactional send with `transactional` for its grant', async () => {
    sesMock.on(SendEmailCommand).resolves({ MessageId: 'ses-2' });
    const { mailTransport } = await sesTransport('switchboard-prod');

    await mailTransport().send(raw, envelope, { ...tags, grant: 'transactional' });

    const [call] = sesMock.commandCalls(SendEmailCommand);
    expect(call!.args[0].input.EmailTags).toContainEqual({ Name: 'switchboard_grant', Value: 'transactional' });
  });

  it('sends without a configuration set when none is configured, and without tags when none are given', async () => {
    sesMock.on(SendEmailCommand).resolves({ MessageId: 'ses-3' });
    const { mailTransport } = await sesTransport(undefined);

    await mailTransport().send(raw, envelope);

    const [call] = sesMock.commandCalls(SendEmailCommand);
    expect(call!.args[0].input).not.toHaveProperty('ConfigurationSetName');
    expect(call!.args[0].input).not.toHaveProperty('EmailTags');
  });

  it('leaves out a tag value SES would refuse rather than failing the send', async () => {
    const { sesTags } = await sesTransport('switchboard-prod');

    expect(sesTags({ ...tags, message: 'not allowed: spaces' })).toEqual([
      { Name: 'switchboard_application', Value: tags.application },
      { Name: 'switchboard_grant', Value: tags.grant },
    ]);
    expect(sesTags({ ...tags, grant: 'x'.repeat(257) }).map((t) => t.Name)).not.toContain('switchboard_grant');
  });
});

/** A relay on loopback that refuses RCPT TO for addresses whose local part is `refused…`. */
let relay: SMTPServer;
let relayUrl: string;
beforeAll(async () => {
  relay = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    disableReverseLookup: true,
    onRcptTo(address, _session, callback) {
      if (address.address.startsWith('refused'))
        return callback(Object.assign(new Error('5.1.1 no such user here'), { responseCode: 550 }));
      callback();
    },
    onData(stream, _session, callback) {
      stream.resume();
      stream.on('end', () => callback());
    },
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  relayUrl = `smtp://127.0.0.1:${(relay.server.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((resolve) => relay.close(() => resolve())));

describe('Function: mailTransport (smtp) answers', () => {
  const smtp = () => transportWith({ MAIL_TRANSPORT: 'smtp', SMTP_RELAY_URL: relayUrl });

  it('answers the recipients the relay accepted and those it refused, with its reply, when it took the message for some', async () => {
    const { mailTransport } = await smtp();

    const answer = await mailTransport().send(raw, { from: 'a@x.io', to: ['b@y.io', 'refused@y.io', 'c@z.io'] });

    expect(answer.accepted).toEqual(['b@y.io', 'c@z.io']);
    expect(answer.rejected).toHaveLength(1);
    expect(answer.rejected[0]!.address).toBe('refused@y.io');
    expect(answer.rejected[0]!.reason).toMatch(/^550 5\.1\.1 no such user here/);
  });

  it('throws a DeliveryError when the relay refused every recipient: nothing was sent', async () => {
    const { mailTransport, DeliveryError } = await smtp();

    await expect(
      mailTransport().send(raw, { from: 'a@x.io', to: ['refused@y.io', 'refused-too@y.io'] }),
    ).rejects.toBeInstanceOf(DeliveryError);
  });
});
