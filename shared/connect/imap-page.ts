import { randomBytes } from 'node:crypto';
import { escapeHtml } from '#shared/mail/entities';
import { wellKnownServers } from '#shared/accounts/settings';
import { HOSTED_PAGE_STYLE } from '#shared/connect/login-page';

/**
 * The hosted IMAP credential page: `GET /v3/connect/auth?provider=imap`, and again, saying what
 * failed, when its form (`POST /v3/connect/credentials`) is refused. The address and password first; the
 * servers and usernames in a closed "Server settings" part, empty unless the address's domain is
 * unknown here. A plain HTML form: no script at all, one nonce'd style under the same strict policy
 * as the hosted login page; every field has its label. A password is never written into the page.
 */
export interface ImapPageFields {
  email?: string | undefined;
  imap_host?: string | undefined;
  imap_port?: string | undefined;
  imap_username?: string | undefined;
  smtp_host?: string | undefined;
  smtp_port?: string | undefined;
  smtp_username?: string | undefined;
}

export const IMAP_PAGE_TITLE = 'Connect your email account';

const STYLE = `${HOSTED_PAGE_STYLE}
label{margin:1rem 0 .25rem}
.hint{margin:.25rem 0 0;font-size:.9rem;opacity:.8}
details{margin:1.5rem 0 0;border:1px solid var(--line);border-radius:.5rem;padding:.5rem 1rem}
summary{cursor:pointer;font-weight:600;padding:.6rem 0}
summary:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
fieldset{border:0;margin:1rem 0 0;padding:0}legend{font-weight:700;padding:0}
.problem{border:2px solid #c62828;border-radius:.5rem;padding:.75rem 1rem;margin:0 0 1rem}
.problem p{margin:0}.problem p+p{margin-top:.25rem}
`;

const page = (
  nonce: string,
  body: string,
) => `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${IMAP_PAGE_TITLE}</title><style nonce="${nonce}">${STYLE}</style></head>
<body><main><h1>${IMAP_PAGE_TITLE}</h1>${body}</main></body></html>`;

type Input = {
  name: keyof ImapPageFields | 'password' | 'smtp_password';
  label: string;
  type: 'text' | 'email' | 'password' | 'number';
  autocomplete: string;
  placeholder?: string | undefined;
  required?: boolean;
  hint?: string;
};

function input(field: Input, value: string | undefined): string {
  const hintId = field.hint ? `${field.name}-hint` : undefined;
  const number = field.type === 'number' ? ' inputmode="numeric" min="1" max="65535"' : '';
  const text = field.type === 'text' ? ' autocapitalize="none" spellcheck="false"' : '';
  return (
    `<label for="${field.name}">${escapeHtml(field.label)}</label>` +
    (field.hint ? `<p class="hint" id="${hintId}">${escapeHtml(field.hint)}</p>` : '') +
    `<input id="${field.name}" name="${field.name}" type="${field.type}" autocomplete="${field.autocomplete}"${number}${text}` +
    (field.placeholder ? ` placeholder="${escapeHtml(field.placeholder)}"` : '') +
    (field.required ? ' required' : '') +
    (hintId ? ` aria-describedby="${hintId}"` : '') +
    // Passwords are never written back: the user types them again.
    (value && field.type !== 'password' ? ` value="${escapeHtml(value)}"` : '') +
    '>'
  );
}

/** The servers a well-known domain would use, as placeholders (the fields stay empty: detection applies). */
function detected(email: string | undefined): { imap?: string; smtp?: string } {
  const domain = email
    ?.slice(email.lastIndexOf('@') + 1)
    .trim()
    .toLowerCase();
  const servers = domain ? wellKnownServers(domain) : undefined;
  return servers ? { imap: servers.imap, smtp: servers.smtp } : {};
}

export function imapLoginPage(p: { flowToken: string; fields: ImapPageFields; problem?: string | undefined }): {
  html: string;
  nonce: string;
} {
  const nonce = randomBytes(16).toString('base64');
  const f = p.fields;
  const servers = detected(f.email);
  const advanced = [f.imap_host, f.imap_port, f.imap_username, f.smtp_host, f.smtp_port, f.smtp_username].some(Boolean);
  // Open when something was typed there, or when the servers are what failed (they are the user's to fix).
  const open = advanced || (p.problem !== undefined && /server|host|port/i.test(p.problem)) ? ' open' : '';
  const problem = p.problem
    ? `<div class="problem" role="alert" id="problem"><p><strong>We could not connect this account.</strong></p><p>${escapeHtml(p.problem)}</p></div>`
    : '';
  // Relative: POST /v3/connect/credentials from the authorization request's URL and from its own (behind any stage prefix).
  const body = `${problem}<form method="post" action="credentials">
<input type="hidden" name="flow_token" value="${escapeHtml(p.flowToken)}">
${input({ name: 'email', label: 'Email address', type: 'email', autocomplete: 'email', required: true }, f.email)}
${input({ name: 'password', label: 'Password', type: 'password', autocomplete: 'current-password', required: true, hint: 'Many providers ask for an app password here: create one in the security settings of your email account.' }, undefined)}
<details${open}><summary>Server settings</summary>
<p class="hint">Leave these empty for well-known providers: the servers are found from your address, and the username is your address.</p>
<fieldset><legend>Incoming mail (IMAP)</legend>
${input({ name: 'imap_host', label: 'IMAP server', type: 'text', autocomplete: 'off', placeholder: servers.imap ?? 'imap.example.com' }, f.imap_host)}
${input({ name: 'imap_port', label: 'IMAP port', type: 'number', autocomplete: 'off', placeholder: '993' }, f.imap_port)}
${input({ name: 'imap_username', label: 'IMAP username', type: 'text', autocomplete: 'username', placeholder: 'Your email address' }, f.imap_username)}
</fieldset>
<fieldset><legend>Outgoing mail (SMTP)</legend>
${input({ name: 'smtp_host', label: 'SMTP server', type: 'text', autocomplete: 'off', placeholder: servers.smtp ?? 'smtp.example.com' }, f.smtp_host)}
${input({ name: 'smtp_port', label: 'SMTP port', type: 'number', autocomplete: 'off', placeholder: '587' }, f.smtp_port)}
${input({ name: 'smtp_username', label: 'SMTP username', type: 'text', autocomplete: 'off', placeholder: 'The IMAP username' }, f.smtp_username)}
${input({ name: 'smtp_password', label: 'SMTP password', type: 'password', autocomplete: 'off', hint: 'Only if it is not the password above.' }, undefined)}
</fieldset></details>
<button type="submit">Connect</button></form>`;
  return { html: page(nonce, body), nonce };
}

/** The form's token is unknown, used or expired: nothing to go on with (the application is not known for sure). */
export function imapLoginEndedPage(): { html: string; nonce: string } {
  const nonce = randomBytes(16).toString('base64');
  const body = `<div class="problem" role="alert"><p><strong>This sign-in has ended.</strong></p><p>The form was already sent, or was open for more than 15 minutes. Go back to the application and connect your account again.</p></div>`;
  return { html: page(nonce, body), nonce };
}
