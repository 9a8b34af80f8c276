import { describe, expect, it } from 'vitest';
import { formActionsFor } from '#shared/connect/flow';
import { imapLoginEndedPage, imapLoginPage } from '#shared/connect/imap-page';

/** The hosted IMAP credential page as HTML (no server): escaping, what is kept, what never is. */
describe('Function: imapLoginPage', () => {
  it('escapes what was typed, keeps it in the fields, and names the problem in an alert', () => {
    // Prepare
    const hostile = '"><script>alert(1)</script>';

    // Act
    const { html, nonce } = imapLoginPage({
      flowToken: 'tok"en',
      fields: { email: `ann${hostile}@example.org`, imap_host: hostile, imap_port: '143' },
      problem: `IMAP ${hostile} refused`,
    });

    // Assess
    expect(html).not.toContain('<script');
    expect(html).toContain('name="flow_token" value="tok&#34;en"');
    expect(html).toMatch(/id="imap_host"[^>]*value="&#34;&#62;&#60;script&#62;/);
    expect(html).toMatch(/id="imap_port"[^>]*value="143"/);
    expect(html).toContain('<div class="problem" role="alert" id="problem">');
    expect(html).toContain('IMAP &#34;&#62;&#60;script&#62;alert(1)&#60;/script&#62; refused');
    expect(html).toContain(`<style nonce="${nonce}">`);
    // Typed server settings stay in view.
    expect(html).toContain('<details open>');
  });

  it('never writes a password into the page, and keeps the server settings folded when nothing there matters', () => {
    const { html } = imapLoginPage({ flowToken: 't', fields: { email: 'ann@gmx.net' } });
    for (const name of ['password', 'smtp_password'])
      expect(html).toMatch(
        new RegExp(
          `<input id="${name}" name="${name}" type="password" autocomplete="[a-z-]+"( required)? aria-describedby="${name}-hint">`,
        ),
      );
    expect(html).toContain('<details>');
    expect(html).not.toContain('role="alert"');
    // A well-known domain's servers are hints, not values: detection applies when the fields stay empty.
    expect(html).toContain('placeholder="imap.gmx.net"');
    expect(html).toContain('placeholder="mail.gmx.net"');
  });

  it('says a used or expired form has ended, with no form to send again', () => {
    const { html } = imapLoginEndedPage();
    expect(html).toContain('This sign-in has ended.');
    expect(html).not.toContain('<form');
  });
});

describe('Function: formActionsFor', () => {
  it('names the origin of a web redirect URI, and the scheme of an app', () => {
    expect(formActionsFor('https://app.example.com/oauth/done?x=1')).toEqual(['https://app.example.com']);
    expect(formActionsFor('http://127.0.0.1:8080/cb')).toEqual(['http://127.0.0.1:8080']);
    expect(formActionsFor('com.example.app:/oauth2redirect')).toEqual(['com.example.app:']);
  });
});
