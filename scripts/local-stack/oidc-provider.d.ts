/**
 * The part of oidc-provider 9.13.3 (which ships no types) that oidc-local.ts uses. Declared inside
 * the module block so this file stays a global declaration rather than an augmentation.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  interface ClientInstance {
    clientId: string;
    redirectUris?: string[];
  }

  interface GrantInstance {
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    save(): Promise<string>;
  }

  interface InteractionDetails {
    uid: string;
    prompt: { name: string; details: { missingOIDCScope?: string[]; missingOIDCClaims?: string[] } };
    params: Record<string, string | undefined>;
    session?: { accountId?: string };
    grantId?: string;
  }

  interface AccessTokenInstance {
    save(): Promise<string>;
    readonly expiration: number;
  }

  /** The Koa context, as far as the middleware here reads and writes it. */
  interface ProviderContext {
    path: string;
    method: string;
    status: number;
    body: unknown;
    /** The response's headers (a redirect's Location); '' for one not set. */
    response: { get(field: string): string };
  }

  class Provider {
    constructor(issuer: string, configuration?: Record<string, unknown>);
    readonly issuer: string;
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
    use(middleware: (ctx: ProviderContext, next: () => Promise<void>) => Promise<void>): this;
    registerGrantType(
      name: string,
      handler: (ctx: ProviderContext, next: () => Promise<void>) => unknown,
      parameters?: string[],
    ): void;
    on(event: string, listener: (...args: unknown[]) => void): this;
    interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(
      req: IncomingMessage,
      res: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    Client: { find(id: string): Promise<ClientInstance | undefined> };
    Grant: {
      new (init: { accountId: string; clientId: string }): GrantInstance;
      find(id: string): Promise<GrantInstance | undefined>;
    };
    AccessToken: new (init: {
      accountId: string;
      client: ClientInstance;
      grantId: string;
      scope: string;
      gty: string;
    }) => AccessTokenInstance;
  }

  export default Provider;
  export { Provider };
}
