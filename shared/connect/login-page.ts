import { randomBytes } from 'node:crypto';
import { escapeHtml } from '#shared/mail/entities';
import { detectProviderOf } from '#shared/providers/mail-domains';
import { isOAuthProvider } from '#shared/accounts/provider-client';
import type { OAuthProvider } from '#shared/providers/oauth';

/**
 * The hosted login page: `GET /v3/connect/auth` without a provider. The user picks the provider of
 * their account among the application's connectors, or types their address and the provider is
 * chosen from it (`prompt=detect`); either way the browser goes on to the same authorization
 * request with `provider` set. Plain HTML forms and links: no script at all, one nonce'd style under
 * the same strict Content-Security-Policy as the booking page; usable by keyboard and screen reader.
 */
export interface LoginChoice {
  provider: string;
  href: string;
}

const LABELS: Record<string, string> = {
  google: 'Google',
  microsoft: 'Microsoft',
  yahoo: 'Yahoo',
  zoom: 'Zoom',
  imap: 'another provider (IMAP)',
};

/** The style of the hosted pages (this one and the IMAP credential page: shared/connect/imap-page.ts), under their nonce. */
export const HOSTED_PAGE_STYLE = `
:root{color-scheme:light dark;--accent:#1f5fbf;--line:#8886}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:Canvas;color:CanvasText}
main{max-width:28rem;margin:0 auto;padding:2rem 1.25rem}
h1{font-size:1.5rem;margin:0 0 1rem}
ul{list-style:none;margin:0;padding:0;display:grid;gap:.75rem}
a.provider,button{display:block;width:100%;text-align:center;font:inherit;border:1px solid var(--line);border-radius:.5rem;padding:.75rem 1rem;min-height:44px;color:inherit;background:transparent;text-decoration:none;cursor:pointer}
button{background:var(--accent);border-color:var(--accent);color:#fff;margin-top:.75rem}
a.provider:focus-visible,button:focus-visible,input:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
label{display:block;font-weight:600;margin:1.5rem 0 .25rem}
input{width:100%;padding:.6rem;border:1px solid var(--line);border-radius:.4rem;font:inherit;background:transparent;color:inherit}
.note{margin:.75rem 0;font-weight:600}
`;

/** The provider of an address from its domain, when it is one this deployment connects. */
export function detectProvider(email: string): OAuthProvider | undefined {
  const provider = detectProviderOf(email);
  return provider && isOAuthProvider(provider) ? provider : undefined;
}

export function hostedLoginPage(p: {
  choices: LoginChoice[];
  prompts: string[];
  loginHint?: string | undefined;
  detectAction: string;
  detectFailed: boolean;
}): { html: string; nonce: string } {
  const nonce = randomBytes(16).toString('base64');
  const action = new URL(p.detectAction);
  // The form repeats the authorization request's parameters, with the address the user typed.
  const hidden = [...action.searchParams]
    .filter(([name]) => name !== 'login_hint' && name !== 'prompt')
    .map(([name, value]) => `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`)
    .join('');
  const detect = `<form method="get" action="${escapeHtml(action.pathname)}">${hidden}<input type="hidden" name="prompt" value="detect">
<label for="email">Your email address</label><input id="email" name="login_hint" type="email" autocomplete="email" required value="${escapeHtml(p.loginHint ?? '')}">
<button type="submit">Continue</button></form>`;
  const list = `<ul aria-label="Providers">${p.choices.map((c) => `<li><a class="provider" href="${escapeHtml(c.href)}">Sign in with ${escapeHtml(LABELS[c.provider] ?? c.provider)}</a></li>`).join('')}</ul>`;
  const detectFirst = p.prompts[0] === 'detect';
  const note = p.detectFailed
    ? `<p class="note" role="status">We could not tell the provider of this address: choose it below.</p>`
    : '';
  const body = detectFirst
    ? `${detect}${note}<h2>Or choose your provider</h2>${list}`
    : `${note}${list}${p.prompts.includes('detect') ? detect : ''}`;
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Connect your account</title><style nonce="${nonce}">${HOSTED_PAGE_STYLE}</style></head>
<body><main><h1>Connect your account</h1>${body}</main></body></html>`;
  return { html, nonce };
}
