import { describe, expect, it } from 'vitest';

/**
 * Deployed (WEBHOOK_LOCAL_MODE=false), a connector's OpenID Connect issuer is https only: http even to
 * loopback is refused. The flag is read when shared/connectors/rules.ts loads, so it is set before.
 */
describe('Function: checkIssuer, deployed', () => {
  it('refuses http to loopback and accepts https', async () => {
    // Prepare
    process.env.WEBHOOK_LOCAL_MODE = 'false';
    const { checkIssuer } = await import('#shared/connectors/rules');
    // Act
    const refused = (() => {
      try {
        checkIssuer('http://127.0.0.1:9000', 'settings.issuer');
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    })();
    // Assess
    expect(refused).toBe(
      "'settings.issuer' must be an https URL naming an OpenID Connect issuer, without query, fragment or user information",
    );
    expect(checkIssuer('https://id.example.com', 'settings.issuer')).toBe('https://id.example.com');
  });
});
