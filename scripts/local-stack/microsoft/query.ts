import { badRequest, GraphError, UnsupportedByFakeError } from './errors';

/**
 * The OData query options the Graph fake evaluates: `$filter` (comparisons, `and`/`or`/`not`,
 * parentheses, `categories/any(c:c eq '…')`), `$orderby` and Outlook's `$search` (KQL with AND, OR, NOT and parentheses). Each entity type
 * gives the fields it can be filtered and sorted on; a property the type has but the fake cannot
 * evaluate is refused (UnsupportedByFakeError), never ignored, so a result is never wider than Graph's.
 */

export type FieldType = 'boolean' | 'string' | 'datetime' | 'enum' | 'int' | 'strings';

export interface Field<T> {
  type: FieldType;
  get: (item: T) => unknown;
}

export interface Fields<T> {
  /** The Graph type, for messages (`microsoft.graph.message`). */
  typeName: string;
  /** Filterable and sortable paths (`isRead`, `from/emailAddress/address`). */
  fields: Record<string, Field<T>>;
  /** Properties the type declares: a path starting with one of these but absent from `fields` is the fake's limit. */
  declared: (property: string) => boolean;
}

type Token = { kind: 'string' | 'word' | 'datetime' | 'number' | 'punct'; text: string };

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const rest = text.slice(i);
    const space = /^\s+/.exec(rest);
    if (space) {
      i += space[0].length;
      continue;
    }
    if (rest[0] === "'") {
      let j = 1;
      let value = '';
      for (;;) {
        if (j >= rest.length)
          throw badRequest(`Syntax error: unterminated string literal at position ${i} in '${text}'.`);
        if (rest[j] === "'") {
          if (rest[j + 1] === "'") {
            value += "'";
            j += 2;
            continue;
          }
          break;
        }
        value += rest[j++];
      }
      tokens.push({ kind: 'string', text: value });
      i += j + 1;
      continue;
    }
    const datetime = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})/.exec(rest);
    if (datetime) {
      tokens.push({ kind: 'datetime', text: datetime[0] });
      i += datetime[0].length;
      continue;
    }
    const number = /^-?\d+(\.\d+)?(?![\w-])/.exec(rest);
    if (number) {
      tokens.push({ kind: 'number', text: number[0] });
      i += number[0].length;
      continue;
    }
    const word = /^[A-Za-z_][\w.]*/.exec(rest);
    if (word) {
      tokens.push({ kind: 'word', text: word[0] });
      i += word[0].length;
      continue;
    }
    if ('()/:,'.includes(rest[0]!)) {
      tokens.push({ kind: 'punct', text: rest[0]! });
      i++;
      continue;
    }
    throw badRequest(`Syntax error: character '${rest[0]}' is not valid at position ${i} in '${text}'.`);
  }
  return tokens;
}

const COMPARISONS = ['eq', 'ne', 'gt', 'ge', 'lt', 'le'] as const;
type Comparison = (typeof COMPARISONS)[number];

/** Compiles a `$filter` into a predicate over items of one entity type. */
export function compileFilter<T>(text: string, fields: Fields<T>): (item: T) => boolean {
  const tokens = tokenize(text);
  let pos = 0;
  const peek = () => tokens[pos];
  const isWord = (t: Token | undefined, word: string) => t?.kind === 'word' && t.text.toLowerCase() === word;
  const expect = (punct: string) => {
    if (peek()?.kind !== 'punct' || peek()!.text !== punct)
      throw badRequest(`Syntax error: '${punct}' expected at position ${pos} in '${text}'.`);
    pos++;
  };

  const orExpr = (): ((item: T) => boolean) => {
    let left = andExpr();
    while (isWord(peek(), 'or')) {
      pos++;
      const [a, b] = [left, andExpr()];
      left = (item) => a(item) || b(item);
    }
    return left;
  };
  const andExpr = (): ((item: T) => boolean) => {
    let left = unary();
    while (isWord(peek(), 'and')) {
      pos++;
      const [a, b] = [left, unary()];
      left = (item) => a(item) && b(item);
    }
    return left;
  };
  const unary = (): ((item: T) => boolean) => {
    if (isWord(peek(), 'not')) {
      pos++;
      const inner = unary();
      return (item) => !inner(item);
    }
    if (peek()?.kind === 'punct' && peek()!.text === '(') {
      pos++;
      const inner = orExpr();
      expect(')');
      return inner;
    }
    return comparison();
  };
  const path = (): string => {
    const first = peek();
    if (first?.kind !== 'word')
      throw badRequest(`Syntax error: a property was expected at position ${pos} in '${text}'.`);
    pos++;
    const segments = [first.text];
    while (peek()?.kind === 'punct' && peek()!.text === '/' && tokens[pos + 1]?.kind === 'word') {
      segments.push(tokens[pos + 1]!.text);
      pos += 2;
    }
    return segments.join('/');
  };
  const fieldOf = (name: string): Field<T> => {
    const field = fields.fields[name];
    if (field) return field;
    const property = name.split('/')[0]!;
    if (!fields.declared(property))
      throw badRequest(`Could not find a property named '${property}' on type '${fields.typeName}'.`);
    throw new UnsupportedByFakeError(`$filter on '${name}'`);
  };
  const comparison = (): ((item: T) => boolean) => {
    const name = path();
    if (name.endsWith('/any')) return lambda(name.slice(0, -4));
    if (peek()?.kind === 'punct' && peek()!.text === '(')
      throw new UnsupportedByFakeError(`the $filter function '${name}()'`);
    const op = peek();
    const operator = COMPARISONS.find((c) => isWord(op, c));
    if (!operator) throw badRequest(`Syntax error: a comparison operator was expected after '${name}' in '${text}'.`);
    pos++;
    const literal = peek();
    if (!literal) throw badRequest(`Syntax error: a value was expected after '${name} ${operator}' in '${text}'.`);
    pos++;
    return compare(name, fieldOf(name), operator, literal);
  };
  const lambda = (name: string): ((item: T) => boolean) => {
    const field = fieldOf(name);
    if (field.type !== 'strings') throw badRequest(`'${name}' is not a collection, so any() does not apply.`);
    expect('(');
    const variable = peek();
    if (variable?.kind !== 'word') throw badRequest(`Syntax error: a lambda variable was expected in '${text}'.`);
    pos++;
    expect(':');
    if (!isWord(peek(), variable.text.toLowerCase()))
      throw new UnsupportedByFakeError(`an any() body other than '${variable.text} eq …'`);
    pos++;
    if (!isWord(peek(), 'eq')) throw new UnsupportedByFakeError(`an any() body other than '${variable.text} eq …'`);
    pos++;
    const literal = peek();
    if (literal?.kind !== 'string') throw badRequest(`any() over '${name}' compares with a string literal.`);
    pos++;
    expect(')');
    const wanted = literal.text.toLowerCase();
    return (item) => ((field.get(item) as string[] | undefined) ?? []).some((v) => v.toLowerCase() === wanted);
  };

  const predicate = orExpr();
  if (pos !== tokens.length) throw badRequest(`Syntax error at position ${pos} in '${text}'.`);
  return predicate;
}

function incompatible(name: string, field: { type: FieldType }, literal: Token): GraphError {
  return badRequest(
    `A binary operator with incompatible types was detected. Found operand types for '${name}' (${field.type}) and '${literal.text}' (${literal.kind}).`,
  );
}

function compare<T>(name: string, field: Field<T>, operator: Comparison, literal: Token): (item: T) => boolean {
  const ordered = (a: number, b: number): boolean => {
    switch (operator) {
      case 'eq':
        return a === b;
      case 'ne':
        return a !== b;
      case 'gt':
        return a > b;
      case 'ge':
        return a >= b;
      case 'lt':
        return a < b;
      case 'le':
        return a <= b;
    }
  };
  const equality = operator === 'eq' || operator === 'ne';
  switch (field.type) {
    case 'boolean': {
      if (literal.kind !== 'word' || !['true', 'false'].includes(literal.text))
        throw incompatible(name, field, literal);
      if (!equality) throw badRequest(`'${operator}' does not apply to the boolean '${name}'.`);
      const wanted = literal.text === 'true';
      return (item) => (field.get(item) === wanted) === (operator === 'eq');
    }
    case 'string':
    case 'enum': {
      if (literal.kind !== 'string') throw incompatible(name, field, literal);
      if (!equality) throw new UnsupportedByFakeError(`'${operator}' on the string '${name}'`);
      const wanted = literal.text.toLowerCase();
      return (item) => (String(field.get(item) ?? '').toLowerCase() === wanted) === (operator === 'eq');
    }
    case 'datetime': {
      if (literal.kind !== 'datetime') throw incompatible(name, field, literal);
      const wanted = Date.parse(literal.text);
      if (Number.isNaN(wanted)) throw badRequest(`'${literal.text}' is not a valid DateTimeOffset.`);
      return (item) => {
        const value = field.get(item);
        return typeof value === 'number' && ordered(value, wanted);
      };
    }
    case 'int': {
      if (literal.kind !== 'number') throw incompatible(name, field, literal);
      const wanted = Number(literal.text);
      return (item) => ordered(Number(field.get(item)), wanted);
    }
    case 'strings':
      throw badRequest(`'${name}' is a collection: compare its items with any().`);
  }
}

/** Compiles `$orderby` (`receivedDateTime desc,subject`) into a comparator. */
export function compileOrderBy<T>(text: string, fields: Fields<T>): (a: T, b: T) => number {
  const keys = text.split(',').map((item) => {
    const [name, direction = 'asc'] = item.trim().split(/\s+/);
    const field = fields.fields[name!];
    if (!field || field.type === 'strings' || field.type === 'boolean')
      throw new UnsupportedByFakeError(`$orderby on '${name}'`);
    return { field, sign: direction.toLowerCase() === 'desc' ? -1 : 1 };
  });
  return (a, b) => {
    for (const { field, sign } of keys) {
      const [x, y] = [field.get(a), field.get(b)];
      const order =
        typeof x === 'number' && typeof y === 'number'
          ? x - y
          : String(x ?? '').localeCompare(String(y ?? ''), 'en', { sensitivity: 'base' });
      if (order) return sign * order;
    }
    return 0;
  };
}

/** What Outlook's `$search` looks in, per message. */
export interface SearchText {
  subject: string;
  body: string;
  from: string;
  to: string;
  cc: string;
  attachment: string;
}

const SEARCH_PROPERTIES: Record<string, (keyof SearchText)[]> = {
  subject: ['subject'],
  body: ['body'],
  from: ['from'],
  to: ['to'],
  cc: ['cc'],
  participants: ['from', 'to', 'cc'],
  recipients: ['to', 'cc'],
  attachment: ['attachment'],
};

/** A `$search` term: a property term (`from:ada`) or a word anywhere in the subject, body or sender. */
function searchTerm(term: string): (message: SearchText) => boolean {
  const colon = /^([A-Za-z]+):(.+)$/s.exec(term);
  const property = colon?.[1]!.toLowerCase();
  if (colon && !SEARCH_PROPERTIES[property!]) throw new UnsupportedByFakeError(`the $search property '${colon[1]}'`);
  const where = colon ? SEARCH_PROPERTIES[property!]! : (['subject', 'body', 'from'] as const);
  const wanted = (colon ? colon[2]! : term).replace(/"/g, '').trim().toLowerCase();
  if (!wanted) throw badRequest(`The $search term '${term}' has no value.`);
  return (m: SearchText) => where.some((w) => m[w].toLowerCase().includes(wanted));
}

/** `$search` split into terms (a quoted phrase kept whole, also after `property:`), `(` and `)`. */
function searchTokens(inner: string): string[] {
  const tokens: string[] = [];
  let i = 0;
  while (i < inner.length) {
    const c = inner[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (c === '(' || c === ')') {
      tokens.push(c);
      i++;
      continue;
    }
    let term = '';
    while (i < inner.length && !/[\s()]/.test(inner[i]!)) {
      if (inner[i] === '"') {
        const close = inner.indexOf('"', i + 1);
        if (close < 0) throw badRequest(`Syntax error: unterminated phrase in the $search '${inner}'.`);
        term += inner.slice(i, close + 1);
        i = close + 1;
      } else term += inner[i++];
    }
    tokens.push(term);
  }
  return tokens;
}

/**
 * Compiles Outlook's `$search` (KQL: `"pizza"`, `"from:ada@example.com subject:report"`,
 * `"(to:a OR to:b) subject:x"`): terms side by side must all match (as with `AND`), `OR` between two
 * matches either, `NOT` negates, parentheses group (`AND` binds tighter than `OR`); a bare word matches
 * anywhere in the subject, body or sender, a `property:value` term in that property, by
 * case-insensitive substring.
 */
export function compileSearch(text: string): (message: SearchText) => boolean {
  const quoted = /^"(.*)"$/s.exec(text.trim());
  const inner = (quoted ? quoted[1]! : text).trim();
  if (!inner) throw badRequest('The $search query option needs a search term.');
  const tokens = searchTokens(inner);
  let at = 0;
  type Matcher = (message: SearchText) => boolean;
  const fail = (what: string) => badRequest(`Syntax error in the $search '${inner}': ${what}.`);
  const or = (): Matcher => {
    const parts = [and()];
    while (tokens[at] === 'OR') {
      at++;
      parts.push(and());
    }
    return parts.length === 1 ? parts[0]! : (m) => parts.some((p) => p(m));
  };
  const and = (): Matcher => {
    const parts = [unary()];
    while (at < tokens.length && tokens[at] !== ')' && tokens[at] !== 'OR') {
      if (tokens[at] === 'AND') at++;
      parts.push(unary());
    }
    return parts.length === 1 ? parts[0]! : (m) => parts.every((p) => p(m));
  };
  const unary = (): Matcher => {
    const token = tokens[at++];
    if (token === undefined) throw fail('a term is missing at the end');
    if (token === 'NOT') {
      const inner = unary();
      return (m) => !inner(m);
    }
    if (token === '(') {
      const group = or();
      if (tokens[at++] !== ')') throw fail("a '(' is not closed");
      return group;
    }
    if (token === ')' || token === 'AND' || token === 'OR') throw fail(`'${token}' where a term was expected`);
    return searchTerm(token);
  };
  const matcher = or();
  if (at < tokens.length) throw fail(`'${tokens[at]}' is not expected`);
  return matcher;
}
