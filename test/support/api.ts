import { rememberSecret } from './secrets';

/**
 * A small HTTP client for integration tests: JSON in, parsed JSON out, headers kept. Every secret it
 * sends or receives is remembered for the end-of-run secrets scan (test/support/secrets.ts).
 */
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

export interface ApiClient {
  request<T = any>(
    method: string,
    path: string,
    options?: { body?: unknown; rawBody?: string | Buffer; headers?: Record<string, string> },
  ): Promise<ApiResponse<T>>;
  get<T = any>(path: string, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  post<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  patch<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  put<T = any>(path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse<T>>;
  delete<T = any>(path: string, headers?: Record<string, string>): Promise<ApiResponse<T>>;
}

/** Fields whose string values are secrets, wherever they are in a JSON or form body, sent or answered. */
const SECRET_FIELDS = new Set([
  'access_token',
  'refresh_token',
  'id_token',
  'webhook_secret',
  'api_key',
  'client_secret',
  'private_key',
]);

function rememberSecretsIn(value: unknown, where: string): void {
  if (Array.isArray(value)) for (const item of value) rememberSecretsIn(item, where);
  if (typeof value !== 'object' || value === null) return;
  const object = value as Record<string, unknown>;
  for (const [key, field] of Object.entries(object)) {
    if (SECRET_FIELDS.has(key)) rememberSecret(field, `${key} ${where}`);
    // The authorization code a token request exchanges.
    else if (key === 'code' && 'grant_type' in object) rememberSecret(field, `code ${where}`);
    else if (key === 'credential_data' && typeof field === 'object' && field !== null)
      rememberSecret(JSON.stringify(field), `credential_data ${where}`);
    rememberSecretsIn(field, where);
  }
}

/** An authorization code in a URL we were sent to (the application's redirect URI). */
function rememberCodeIn(url: string | null, base: string, where: string): void {
  if (!url) return;
  try {
    rememberSecret(new URL(url, base).searchParams.get('code') ?? undefined, `code ${where}`);
  } catch {
    // Not a URL: nothing to remember.
  }
}

/** A request body as fields, when it is a (small) JSON or form body: secrets travel in those. */
function formOrJson(body: string | Buffer | undefined, contentType: string | undefined): unknown {
  if (body === undefined || body.length > 1024 * 1024) return undefined;
  const text = body.toString();
  if (contentType?.startsWith('application/x-www-form-urlencoded'))
    return Object.fromEntries(new URLSearchParams(text));
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function apiClient(baseUrl: string, apiKey?: string): ApiClient {
  rememberSecret(apiKey, 'bearer credential of an API client (API key or access token)');
  const request: ApiClient['request'] = async (method, path, options = {}) => {
    const headers: Record<string, string> = {
      ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}),
      ...options.headers,
    };
    let body: string | Buffer | undefined = options.rawBody;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers['content-type'] ??= 'application/json';
    }
    const route = `${method} ${path.split('?')[0]}`;
    const contentType = Object.entries(headers).find(([name]) => name.toLowerCase() === 'content-type')?.[1];
    rememberSecretsIn(formOrJson(body, contentType), `sent with ${route}`);
    const response = await fetch(baseUrl + path, { method, headers, body });
    const text = await response.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    rememberSecretsIn(parsed, `in the answer to ${route}`);
    rememberCodeIn(response.headers.get('location'), baseUrl + path, `in the Location of ${route}`);
    if (response.redirected) rememberCodeIn(response.url, baseUrl + path, `in the URL ${route} was redirected to`);
    return { status: response.status, headers: response.headers, body: parsed as never, text };
  };
  return clientOf(request);
}

/** A client around a `request` function: the verbs are `request` with their method. */
export function clientOf(request: ApiClient['request']): ApiClient {
  return {
    request,
    get: (path, headers) => request('GET', path, { headers }),
    post: (path, body, headers) => request('POST', path, { body, headers }),
    patch: (path, body, headers) => request('PATCH', path, { body, headers }),
    put: (path, body, headers) => request('PUT', path, { body, headers }),
    delete: (path, headers) => request('DELETE', path, { headers }),
  };
}
