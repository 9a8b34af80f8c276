import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { describe, expect, it } from 'vitest';

/**
 * Function: seal / unseal (shared/crypto/sealed.ts). Secrets stored for later use are AES-256-GCM
 * under a key derived per purpose, bound to their record: they open only as what they were sealed as.
 */
const secrets = mockClient(SecretsManagerClient);
secrets.on(GetSecretValueCommand).resolves({ SecretString: 'm'.repeat(64) });
const { seal, unseal, sealJson, unsealJson } = await import('#shared/crypto/sealed');

describe('Function: seal', () => {
  it('round-trips, and never stores the plaintext or the same ciphertext twice', async () => {
    const sealed = await seal('client-secret-value', 'connector-secret', 'app#a/connector#google');
    const again = await seal('client-secret-value', 'connector-secret', 'app#a/connector#google');
    expect(sealed).toMatch(/^s1:/);
    expect(sealed).not.toContain('client-secret-value');
    expect(again).not.toBe(sealed);
    expect(await unseal(sealed, 'connector-secret', 'app#a/connector#google')).toBe('client-secret-value');
    expect(
      await unsealJson(await sealJson({ a: 1 }, 'provider-tokens', 'grant#g'), 'provider-tokens', 'grant#g'),
    ).toEqual({ a: 1 });
  });

  it('does not open under another purpose or for another record', async () => {
    const sealed = await seal('refresh-token', 'provider-tokens', 'grant#g1');
    await expect(unseal(sealed, 'provider-tokens', 'grant#g2')).rejects.toThrow();
    await expect(unseal(sealed, 'connector-secret', 'grant#g1')).rejects.toThrow();
    const tampered = sealed.slice(0, -2) + (sealed.endsWith('A') ? 'BB' : 'AA');
    await expect(unseal(tampered, 'provider-tokens', 'grant#g1')).rejects.toThrow();
    await expect(unseal('v1:x:y:z', 'provider-tokens', 'grant#g1')).rejects.toThrow(/format/);
  });
});
