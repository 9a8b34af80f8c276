import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ALL_ROUTES, API_ROUTES } from '#functions/routes';
import { InvalidRequestError } from '#shared/errors';
import { generateFallbackRoutes, generateGroupValidators } from '#shared/http/validator-codegen';
import type { GeneratedRoutes } from '#shared/http/route';
import { toValidator } from '#shared/http/validation';
import { readFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const connect = require('../../functions/connect/routes.generated.cjs') as GeneratedRoutes;
const grants = require('../../functions/grants/routes.generated.cjs') as GeneratedRoutes;

describe('generated validators', () => {
  it.each(Object.keys(API_ROUTES))(
    'are current for functions/%s (run `npm run generate` after changing a schema)',
    (group) => {
      const file = new URL(`../../functions/${group}/routes.generated.cjs`, import.meta.url);
      expect(readFileSync(file, 'utf8')).toBe(
        generateGroupValidators(group, API_ROUTES[group as keyof typeof API_ROUTES]),
      );
    },
  );

  it("are current for the $default function's route list", () => {
    const file = new URL('../../functions/fallback/routes.generated.cjs', import.meta.url);
    expect(readFileSync(file, 'utf8')).toBe(generateFallbackRoutes(ALL_ROUTES));
  });
});

describe('Function: toValidator', () => {
  const createBody = toValidator(connect.body.createCustomGrant!, 'body');
  const listQuery = toValidator(grants.query.listGrants!, 'query');

  it('names every offending field in one message', () => {
    try {
      createBody({ provider: 'x', settings: { email_address: 'nope', extra: 1 }, colour: 'red' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(InvalidRequestError);
      const message = (error as Error).message;
      expect(message).toContain("unknown field 'colour'");
      expect(message).toContain("unknown field 'settings.extra'");
      expect(message).toContain("'provider' must be one of: nylas, agent");
      expect(message).toContain("'settings.email_address' must be a valid email address");
    }
  });

  it('coerces query strings and rejects wrong ones', () => {
    const query: Record<string, unknown> = { limit: '10', offset: '0' };
    listQuery(query);
    expect(query).toEqual({ limit: 10, offset: 0 });
    expect(() => listQuery({ limit: 'ten' })).toThrow("'limit' must be of type integer");
    expect(() => listQuery({ limt: '1' })).toThrow("unknown query parameter 'limt'");
  });

  it('does not coerce bodies', () => {
    const update = toValidator(grants.body.updateGrant!, 'body');
    expect(() => update({ blocked: 'true' })).toThrow("'blocked' must be of type boolean");
    expect(() => update({})).toThrow('at least one field');
  });
});
