import type { ImapLoginBody } from '#schemas/connect';
import type { CreateCustomGrantBody } from '#schemas/grants';
import { formActionsFor, issueCode, renewFlow, withParams } from '#shared/connect/flow';
import { imapLoginEndedPage, imapLoginPage, type ImapPageFields } from '#shared/connect/imap-page';
import { tokenHash } from '#shared/accounts/issued-tokens';
import * as db from '#shared/db/oauth';
import { ApiError, InvalidRequestError } from '#shared/errors';
import { customImapGrant } from '#shared/connect/custom-account';
import { IMAP_PROVIDER } from '#shared/providers/names';
import { clock } from '#shared/time';

/**
 * The hosted IMAP credential page's form (`POST /v3/connect/credentials`). Its hidden token is the `state`
 * of a flow `GET /v3/connect/auth?provider=imap` stored: taken once, so a token works for one
 * submission. The credentials go through the very code of `POST /v3/connect/custom` (IMAP login and
 * SMTP AUTH before a grant exists: shared/connect/custom-account.ts). Refused, the page comes back (400) saying
 * what failed, with what was typed except the passwords, under a new token for the same flow; accepted,
 * the browser goes on to the application's redirect URI with a code and its state, as from the OAuth
 * callback. No password is kept anywhere but sealed with the grant.
 */
export type ImapLoginResult =
  | { kind: 'redirect'; location: string }
  | { kind: 'page'; html: string; nonce: string; status: number; formActions: string[] };

/** What the page calls each setting, for messages written in the API's words (`'settings.imap_host'`). */
const LABELS: Record<string, string> = {
  imap_username: 'IMAP username',
  imap_password: 'Password',
  imap_host: 'IMAP server',
  imap_port: 'IMAP port',
  smtp_host: 'SMTP server',
  smtp_port: 'SMTP port',
  smtp_username: 'SMTP username',
  smtp_password: 'SMTP password',
  email: 'Email address',
};
const inPageWords = (message: string) =>
  message
    .replace(/^The account could not be connected: /, '')
    .replace(/'settings\.(\w+)'/g, (whole, field: string) =>
      Object.hasOwn(LABELS, field) ? `“${LABELS[field]}”` : whole,
    );

/** A typed field, or undefined when left empty (browsers send every field of the form). */
const given = (value: string | undefined) => (value?.trim() ? value.trim() : undefined);

function port(value: string | undefined, label: string): number | undefined {
  const text = given(value);
  if (text === undefined) return undefined;
  const number = /^\d{1,5}$/.test(text) ? Number(text) : NaN;
  if (!(number >= 1 && number <= 65535)) throw new InvalidRequestError(`“${label}” must be a number from 1 to 65535`);
  return number;
}

/** The custom grant request the form amounts to (what `POST /v3/connect/custom` would be sent). */
function customRequest(body: ImapLoginBody): CreateCustomGrantBody {
  const email = given(body.email);
  if (!email) throw new InvalidRequestError('Enter the email address of the account');
  if (!body.password) throw new InvalidRequestError('Enter the password (or app password) of the account');
  const imapPort = port(body.imap_port, 'IMAP port');
  const smtpPort = port(body.smtp_port, 'SMTP port');
  const optional = {
    imap_host: given(body.imap_host),
    smtp_host: given(body.smtp_host),
    smtp_username: given(body.smtp_username),
    smtp_password: body.smtp_password || undefined,
  };
  return {
    provider: IMAP_PROVIDER,
    settings: {
      email,
      imap_username: given(body.imap_username) ?? email,
      imap_password: body.password,
      ...Object.fromEntries(Object.entries(optional).filter(([, value]) => value !== undefined)),
      ...(imapPort !== undefined ? { imap_port: imapPort } : {}),
      ...(smtpPort !== undefined ? { smtp_port: smtpPort } : {}),
    },
  };
}

/** What the page shows again: everything typed but the passwords. */
const typed = (body: ImapLoginBody): ImapPageFields => ({
  email: body.email,
  imap_host: body.imap_host,
  imap_port: body.imap_port,
  imap_username: body.imap_username,
  smtp_host: body.smtp_host,
  smtp_port: body.smtp_port,
  smtp_username: body.smtp_username,
});

/**
 * `fetchSite`: the browser's Sec-Fetch-Site. The token already ties a submission to its page; a form
 * posted from another site (login CSRF with the attacker's own token) is refused as well.
 */
export async function submitImapLogin(
  body: ImapLoginBody,
  meta: { fetchSite?: string | undefined; ip: string; userAgent: string },
): Promise<ImapLoginResult> {
  if (meta.fetchSite === 'cross-site' || meta.fetchSite === 'same-site')
    return { kind: 'page', status: 400, ...imapLoginEndedPage(), formActions: [] };
  const flow = await db.takeFlow(tokenHash(body.flow_token), clock.nowSeconds());
  if (!flow || flow.provider !== IMAP_PROVIDER || flow.response_type !== 'code')
    return { kind: 'page', status: 400, ...imapLoginEndedPage(), formActions: [] };
  const formActions = formActionsFor(flow.redirect_uri);
  let grant;
  try {
    // The flow stands for the application: its client_id and redirect URI were checked when it began.
    grant = await customImapGrant({ applicationId: flow.application_id, credential: 'api_key' }, customRequest(body), {
      ip: flow.ip ?? meta.ip,
      userAgent: flow.user_agent ?? meta.userAgent,
    });
  } catch (error) {
    // What the user can fix (a refused login, an unknown server, a missing field; a conflict with another grant) is shown on the page.
    if (!(error instanceof ApiError && error.expose && error.status < 500)) throw error;
    const flowToken = await renewFlow(flow);
    return {
      kind: 'page',
      status: 400,
      ...imapLoginPage({ flowToken, fields: typed(body), problem: inPageWords(error.message) }),
      formActions,
    };
  }
  const code = await issueCode(flow, grant, grant.scope);
  return { kind: 'redirect', location: withParams(flow.redirect_uri, { code, state: flow.app_state }) };
}
