import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { API_ROUTES } from '#functions/routes';
import { MAX_MESSAGE_TEXT } from '#schemas/common';
import { InvalidRequestError } from '#shared/errors';
import { routeKey, type GeneratedRoutes, type RouteSpec } from '#shared/http/route';
import { toValidator } from '#shared/http/validation';
import { bodyWith, boundsLength, fieldLabel, stringFields } from '../support/schema-fields';

/**
 * Every string a request schema accepts has a length bound (a maxLength, a list of values, or a
 * pattern that bounds it), so no client value
 * reaches storage unbounded: names, IDs, addresses, slugs and filter values become DynamoDB key values,
 * which hold 1,024 or 2,048 bytes (a longer one reached clients as a 500). The generated validators
 * refuse one character more, naming the field and the bound. Values within the bounds that would still
 * not fit a key (four-byte characters) are caught before storage too: test/integration/key-bounds.test.ts.
 */
const require = createRequire(import.meta.url);
const ROUTES = Object.entries(API_ROUTES).flatMap(([group, table]) =>
  Object.entries(table).map(([name, spec]) => ({ group, name, spec: spec as RouteSpec })),
);
const FIELDS = ROUTES.flatMap((route) => stringFields(route.spec).fields.map((field) => ({ ...route, field })));
/** Text that is bodies and files rather than names: bounded by the request's own size. */
const LONGEST = MAX_MESSAGE_TEXT;

describe('Schemas: strings', () => {
  it('walks every route, and finds the strings the probes sent too long', () => {
    const labels = FIELDS.map((f) => `${routeKey(f.spec)} ${f.field.where} ${fieldLabel(f.field)}`);
    expect(labels).toContain('POST /v3/grants/{grant_id}/scheduling/configurations body slug');
    expect(labels).toContain('POST /v3/lists/{list_id}/items body items[0]');
    expect(labels).toContain('GET /v3/scheduling/availability query slug');
    expect(labels).toContain('POST /v3/connect/custom body external_id');
    expect(labels).toContain('GET /v3/grants/{grant_id}/messages query metadata_pair');
    expect(FIELDS.length).toBeGreaterThan(500);
  });

  it.each(ROUTES.map((r) => [routeKey(r.spec), r] as const))('%s: every string has a length bound', (_key, route) => {
    const unbounded = stringFields(route.spec)
      .fields.filter((f) => !f.listed && !f.boundedPattern && !(f.maxLength !== undefined && f.maxLength <= LONGEST))
      .map((f) => `${f.where} '${fieldLabel(f)}' has maxLength ${f.maxLength}`);
    expect(unbounded).toEqual([]);
  });

  it('reports a string without a bound', () => {
    const route = {
      query: { type: 'object', properties: { q: { type: 'string' }, kind: { type: 'string', enum: ['a'] } } },
      body: {
        type: 'object',
        properties: {
          n: { type: ['string', 'null'], maxLength: 9 },
          color: { type: 'string', pattern: '^#[0-9a-f]{6}$' },
          word: { type: 'string', pattern: '^[a-z]+$' },
        },
      },
    } as const;
    expect(
      stringFields(route).fields.map((f) => [f.where, fieldLabel(f), f.maxLength, f.listed || f.boundedPattern]),
    ).toEqual([
      ['query', 'q', undefined, false],
      ['query', 'kind', undefined, true],
      ['body', 'n', 9, false],
      ['body', 'color', undefined, true],
      ['body', 'word', undefined, false],
    ]);
  });

  it('tells patterns that bound a length from those that do not', () => {
    for (const bounded of [
      '^#[0-9a-fA-F]{6}$',
      '^\\d{4}-\\d{2}-\\d{2}$',
      '^(\\d{4}|-)-\\d{2}-\\d{2}$',
      '^[0-9]{1,20}$',
      '^[+*]{2}$',
    ])
      expect(boundsLength(bounded), bounded).toBe(true);
    for (const unbounded of ['^[a-z]+$', '^a*$', '^x{2,}$', '[0-9]{6}', '^[0-9]{6}', '^\\S+$', '^a\\+{3}b*$'])
      expect(boundsLength(unbounded), unbounded).toBe(false);
  });

  // A few fields take whole bodies and files (MAX_MESSAGE_TEXT): one character past them is 25 MiB of text, which the
  // bound above checks by its value rather than by sending it.
  const sendable = FIELDS.filter((f) => f.field.maxLength !== undefined && f.field.maxLength < LONGEST);
  it.each(sendable.map((f) => [`${routeKey(f.spec)} ${f.field.where} ${fieldLabel(f.field)}`, f] as const))(
    '%s: the generated validator refuses one character more, naming field and bound',
    (_label, { group, name, field }) => {
      const generated = require(`../../functions/${group}/routes.generated.cjs`) as GeneratedRoutes;
      const validate = toValidator(
        field.where === 'query' ? generated.query[name]! : generated.body[name]!,
        field.where,
      );
      const value = 'a'.repeat(field.maxLength! + 1);
      let thrown: unknown;
      try {
        validate(bodyWith(field, value));
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(InvalidRequestError);
      expect((thrown as Error).message).toContain(
        `'${fieldLabel(field)}' must be at most ${field.maxLength} characters`,
      );
    },
  );
});
