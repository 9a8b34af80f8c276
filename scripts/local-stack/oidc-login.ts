/**
 * A browser's part in an OAuth flow, for the tests and for `npm run sign-in` (scripts/sign-in.ts): follows redirects from `startUrl` with a small cookie
 * jar, fills the sign-in form of the local OpenID Connect server (scripts/local-stack/oidc-local.ts)
 * with `login`, allows (or with `consent: false`, denies) on its consent page, and returns the first
 * URL for which `stopAt` holds, without fetching it: our /v3/connect/callback, or the application's
 * redirect URI. Throws on an answer it cannot go on from (an error page, a 4xx/5xx).
 */

interface Cookie {
  name: string;
  value: string;
  host: string;
  path: string;
}

export class CookieJar {
  private cookies: Cookie[] = [];

  store(url: URL, setCookies: string[]) {
    for (const line of setCookies) {
      const [pair, ...attributes] = line.split(';');
      const eq = pair!.indexOf('=');
      if (eq <= 0) continue;
      const name = pair!.slice(0, eq).trim();
      const value = pair!.slice(eq + 1).trim();
      let path = url.pathname.replace(/\/[^/]*$/, '') || '/';
      let expired = false;
      for (const attribute of attributes) {
        const [key, ...rest] = attribute.split('=');
        const v = rest.join('=').trim();
        switch (key!.trim().toLowerCase()) {
          case 'path':
            path = v || '/';
            break;
          case 'max-age':
            if (Number(v) <= 0) expired = true;
            break;
          case 'expires':
            if (Date.parse(v) <= Date.now()) expired = true;
            break;
        }
      }
      this.cookies = this.cookies.filter((c) => !(c.name === name && c.host === url.host && c.path === path));
      if (!expired) this.cookies.push({ name, value, host: url.host, path });
    }
  }

  header(url: URL): string | undefined {
    const matching = this.cookies.filter(
      (c) =>
        c.host === url.host &&
        (url.pathname === c.path || url.pathname.startsWith(c.path.endsWith('/') ? c.path : `${c.path}/`)),
    );
    return matching.length ? matching.map((c) => `${c.name}=${c.value}`).join('; ') : undefined;
  }
}

interface Form {
  id: string | undefined;
  action: string;
  method: string;
  inputs: Map<string, string>;
}

const unescape = (value: string) =>
  value.replace(/&(#(\d+)|#x([0-9a-f]+)|amp|lt|gt|quot|apos);/gi, (_m, _e, dec: string, hex: string) =>
    dec
      ? String.fromCharCode(Number(dec))
      : hex
        ? String.fromCharCode(parseInt(hex, 16))
        : ({ '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&apos;': "'" } as Record<string, string>)[
            _m.toLowerCase()
          ]!,
  );

function attribute(tag: string, name: string): string | undefined {
  const match = new RegExp(`\\s${name}\\s*=\\s*(?:"([^"]*)"|'([^']*)')`, 'i').exec(tag);
  return match ? unescape(match[1] ?? match[2] ?? '') : undefined;
}

function forms(html: string): Form[] {
  return [...html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)].map(([, tag, body]) => ({
    id: attribute(tag!, 'id'),
    action: attribute(tag!, 'action') ?? '',
    method: (attribute(tag!, 'method') ?? 'get').toLowerCase(),
    inputs: new Map(
      [...body!.matchAll(/<input\b([^>]*)>/gi)].flatMap(([, input]) => {
        const name = attribute(input!, 'name');
        return name ? [[name, attribute(input!, 'value') ?? ''] as [string, string]] : [];
      }),
    ),
  }));
}

export async function followLogin(
  startUrl: string,
  opts: {
    login: string;
    stopAt: (url: URL) => boolean;
    consent?: boolean;
    password?: string;
    jar?: CookieJar;
    maxSteps?: number;
  },
): Promise<URL> {
  const jar = opts.jar ?? new CookieJar();
  let url = new URL(startUrl);
  let init: { method: string; body?: URLSearchParams } = { method: 'GET' };
  for (let step = 0; step < (opts.maxSteps ?? 20); step++) {
    if (opts.stopAt(url)) return url;
    const cookie = jar.header(url);
    const response = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        accept: 'text/html,application/json',
        ...(cookie ? { cookie } : {}),
        ...(init.body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
      },
    });
    jar.store(url, response.headers.getSetCookie());
    const location = response.headers.get('location');
    if (response.status >= 300 && response.status < 400 && location) {
      url = new URL(location, url);
      init = { method: 'GET' };
      continue;
    }
    const text = await response.text();
    if (response.status !== 200)
      throw new Error(`followLogin: ${init.method} ${url.href} answered ${response.status}: ${text.slice(0, 500)}`);
    const found = forms(text);
    const login = found.find((f) => f.inputs.has('login'));
    const confirm = found.find((f) => f.id === 'confirm' || /\/confirm$/.test(f.action));
    const abort = found.find((f) => f.id === 'abort' || /\/abort$/.test(f.action));
    let form: Form | undefined;
    if (login) {
      form = login;
      form.inputs.set('login', opts.login);
      form.inputs.set('password', opts.password ?? 'any password');
    } else if (confirm) {
      form = opts.consent === false ? abort : confirm;
    }
    if (!form) throw new Error(`followLogin: no sign-in or consent form at ${url.href}: ${text.slice(0, 500)}`);
    const target = new URL(form.action || url.href, url);
    init = form.method === 'post' ? { method: 'POST', body: new URLSearchParams([...form.inputs]) } : { method: 'GET' };
    if (form.method !== 'post') for (const [k, v] of form.inputs) target.searchParams.set(k, v);
    url = target;
  }
  throw new Error(`followLogin: no URL matched stopAt within ${opts.maxSteps ?? 20} steps (last: ${url.href})`);
}
