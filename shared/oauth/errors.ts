/**
 * What can go wrong talking to an authorization server, by what the caller should do about it.
 * No message or `cause` ever carries a token, a code, a secret or a raw answer body: the errors of
 * the underlying library hold whole responses, so they are never attached.
 */

/** The server answered an OAuth error (`error`, `error_description`): the request was refused as made. */
export class ProviderOAuthError extends Error {
  readonly error: string;
  readonly error_description?: string;
  readonly status?: number;

  constructor(error: string, description?: string, options: { status?: number; message?: string } = {}) {
    super(options.message ?? `the authorization server answered ${error}${description ? `: ${description}` : ''}`);
    this.name = new.target.name;
    this.error = error;
    if (description !== undefined) this.error_description = description;
    if (options.status !== undefined) this.status = options.status;
  }
}

/** `invalid_grant`: the refresh token or the code is dead (revoked, expired, used). Never retry it. */
export class InvalidGrantError extends ProviderOAuthError {}

/** Network failure, timeout, 5xx or 429: transient, retry later. It never means the grant is dead. */
export class ProviderUnavailableError extends Error {
  readonly status?: number;

  constructor(message: string, options: { status?: number } = {}) {
    super(message);
    this.name = new.target.name;
    if (options.status !== undefined) this.status = options.status;
  }
}

/** The ID token failed verification: signature, `iss`, `aud`, `nonce`, `exp`/`iat`, or it is missing. */
export class IdTokenError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/**
 * The provider's configuration cannot work and retrying will not help: an issuer whose discovery
 * document names another issuer, an address the URL policy refuses (private, or plain http outside
 * local mode), metadata without a needed endpoint, a service account key that is not a private key.
 */
export class ProviderConfigurationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** The provider authenticated the user but did not say who they are (no email address shared). */
export class IdentityError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}
