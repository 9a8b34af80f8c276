import { describe, expect, it } from 'vitest';
import { Grant } from '#schemas/grants';
import { InvalidRequestError } from '#shared/errors';
import { parseSelect, project, selectableFields } from '#shared/http/select';

const fields = selectableFields(Grant);

describe('Function: parseSelect', () => {
  it('accepts top-level fields, trimming and deduplicating', () => {
    expect(parseSelect(' id, email ,id', fields)).toEqual(['id', 'email']);
  });

  it.each([
    ['settings.app_permission', /nested/],
    ['id,colour', /colour/],
    [',,', /at least one/],
  ])('rejects %s', (raw, message) => {
    expect(() => parseSelect(raw, fields)).toThrow(InvalidRequestError);
    expect(() => parseSelect(raw, fields)).toThrow(message);
  });
});

describe('Function: project', () => {
  it('keeps only the selected fields that exist', () => {
    expect(project({ id: 'a', email: 'e', blocked: false }, ['id', 'blocked', 'scope'])).toEqual({
      id: 'a',
      blocked: false,
    });
  });
});
