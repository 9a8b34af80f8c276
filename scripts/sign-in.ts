/**
 * `npm run sign-in -- <authorization URL> <email address>`: plays the browser of a hosted OAuth flow
 * against the local OpenID Connect server of `npm start` (any address signs in), from Switchboard's
 * `GET /v3/connect/auth` URL to the application's redirect URI, and prints that last URL (with `code`
 * and `state`) without opening it. Open the authorization URL in a real browser to see the same pages.
 */
import { followLogin } from './local-stack/oidc-login';

const [start, login] = process.argv.slice(2);
if (!start || !login) {
  process.stderr.write('usage: npm run sign-in -- <authorization URL> <email address>\n');
  process.exit(2);
}
const auth = new URL(start);
const redirect = auth.searchParams.get('redirect_uri');
if (!redirect) {
  process.stderr.write('the authorization URL has no redirect_uri\n');
  process.exit(2);
}
// Stop at the application's redirect URI: where the browser would hand the code to the application.
followLogin(start, { login, stopAt: (url) => url.href.startsWith(redirect) && url.origin !== auth.origin })
  .then((url) => process.stdout.write(`${url.href}\n`))
  .catch((error: Error) => {
    process.stderr.write(`sign-in: ${error.message}\n`);
    process.exit(1);
  });
