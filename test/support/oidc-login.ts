/** The browser's part in an OAuth flow at the local OpenID Connect server (scripts/local-stack/oidc-login.ts). */
export { CookieJar, followLogin } from '../../scripts/local-stack/oidc-login';
