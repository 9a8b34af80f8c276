import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '#shared/errors';
import { imapAccountOf } from '#shared/accounts/settings';

/** An IMAP grant's servers from what a create request names (shared/accounts/settings.ts). */
const account = (settings: Record<string, unknown>) =>
  imapAccountOf({ provider: 'imap', settings: { imap_password: 'secret', ...settings } } as never);

describe('IMAP settings', () => {
  it('fills in the servers of well-known domains from the domain table, country variants and per-domain services included', () => {
    expect(account({ imap_username: 'Ann@Gmail.com' }).account).toEqual({
      email: 'ann@gmail.com',
      imap: { host: 'imap.gmail.com', port: 993, tls: 'implicit', username: 'Ann@Gmail.com' },
      smtp: { host: 'smtp.gmail.com', port: 587, tls: 'starttls', username: 'Ann@Gmail.com' },
    });
    expect(account({ imap_username: 'bob@yahoo.co.uk' }).account.smtp).toMatchObject({
      host: 'smtp.mail.yahoo.com',
      port: 465,
      tls: 'implicit',
    });
    expect(account({ imap_username: 'li@163.com' }).account.imap.host).toBe('imap.163.com');
    expect(account({ imap_username: 'eve@me.com' }).account.imap.host).toBe('imap.mail.me.com');
  });

  it('takes what the request names: hosts, ports (TLS mode from the port), SMTP credentials of their own', () => {
    const { account: a, passwords } = account({
      imap_username: 'u1',
      email: 'u@corp.example',
      imap_host: 'Mail.Corp.Example',
      imap_port: 143,
      smtp_host: 'smtp.corp.example',
      smtp_port: 465,
      smtp_username: 's1',
      smtp_password: 'other',
    });
    expect(a).toEqual({
      email: 'u@corp.example',
      imap: { host: 'mail.corp.example', port: 143, tls: 'starttls', username: 'u1' },
      smtp: { host: 'smtp.corp.example', port: 465, tls: 'implicit', username: 's1' },
    });
    expect(passwords).toEqual({ imap_password: 'secret', smtp_password: 'other' });
  });

  it('refuses what it cannot use, saying what is missing', () => {
    expect(() => account({ imap_username: 'a@corp.example' })).toThrow(
      /'settings.imap_host' is required: corp.example is not a mail domain/,
    );
    expect(() => account({ imap_username: 'plainuser', imap_host: 'h.example', smtp_host: 's.example' })).toThrow(
      /not an address; give 'settings.email'/,
    );
    expect(() =>
      account({ imap_username: 'a@b.example', imap_host: 'imap://h.example', smtp_host: 's.example' }),
    ).toThrow(InvalidRequestError);
    expect(() => imapAccountOf({ provider: 'imap', settings: { imap_username: 'a@gmail.com' } } as never)).toThrow(
      /'settings.imap_password' is required/,
    );
  });
});
