import { describe, expect, it } from 'vitest';
import { InvalidRequestError } from '#shared/errors';
import {
  MAX_RENDERED_LENGTH,
  TEMPLATE_ENGINES,
  assertEngine,
  checkTemplate,
  renderTemplate,
  type TemplateEngine,
} from '#shared/templates/render';

/** Runs `action`, expects an InvalidRequestError and returns its message. */
function invalidRequestMessage(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidRequestError);
    return (error as InvalidRequestError).message;
  }
  throw new Error('expected an InvalidRequestError, but nothing was thrown');
}

/** The same template written for each engine. */
const NESTED: Record<TemplateEngine, { subject: string; body: string }> = {
  mustache: { subject: 'Hello {{user.name}}', body: '<p>{{user.name}} works at {{user.company.name}}</p>' },
  handlebars: { subject: 'Hello {{user.name}}', body: '<p>{{user.name}} works at {{user.company.name}}</p>' },
  twig: { subject: 'Hello {{ user.name }}', body: '<p>{{ user.name }} works at {{ user.company.name }}</p>' },
};

const LOOP: Record<TemplateEngine, string> = {
  mustache: '{{#items}}{{.}}{{/items}}',
  handlebars: '{{#each items}}{{this}}{{/each}}',
  twig: '{% for item in items %}{% if item %}{{ item }}{% endif %}{% endfor %}',
};

describe('Function: assertEngine', () => {
  it.each(TEMPLATE_ENGINES)('accepts %s', (engine) => {
    expect(() => assertEngine(engine)).not.toThrow();
  });

  it('refuses an unknown engine and lists the valid ones', () => {
    const message = invalidRequestMessage(() => assertEngine('jinja'));
    expect(message).toBe("'engine' must be one of: mustache, handlebars, twig; got 'jinja'");
  });
});

describe('Function: renderTemplate', () => {
  it.each(TEMPLATE_ENGINES)('renders subject and body with nested variables (%s)', (engine) => {
    const rendered = renderTemplate(engine, NESTED[engine], { user: { name: 'Ada', company: { name: 'Analytical' } } });
    expect(rendered).toEqual({ subject: 'Hello Ada', body: '<p>Ada works at Analytical</p>' });
  });

  it.each(TEMPLATE_ENGINES)('HTML-escapes variables in the body but not in the subject (%s)', (engine) => {
    // Prepare
    const name = `Tom & "Jerry" <tj@example.com>`;

    // Act
    const rendered = renderTemplate(engine, NESTED[engine], { user: { name, company: { name: '<b>ACME</b>' } } });

    // Assess
    expect(rendered.subject).toBe(`Hello ${name}`);
    expect(rendered.body).toContain('Tom &amp; ');
    expect(rendered.body).toContain('&lt;tj@example.com&gt;');
    expect(rendered.body).toContain('&lt;b&gt;ACME');
    expect(rendered.body).not.toContain('<tj@example.com>');
    expect(rendered.body).not.toContain('<b>');
  });

  it.each([
    ['mustache', '{{{html}}}|{{& html}}'],
    ['handlebars', '{{{html}}}|{{{html}}}'],
    ['twig', '{{ html|raw }}|{{ html|raw }}'],
  ] as const)('keeps raw output raw in the body (%s)', (engine, body) => {
    const rendered = renderTemplate(engine, { body }, { html: '<b>bold</b> & co' });
    expect(rendered).toEqual({ body: '<b>bold</b> & co|<b>bold</b> & co' });
  });

  it.each(TEMPLATE_ENGINES)('renders missing variables as empty strings (%s)', (engine) => {
    const rendered = renderTemplate(engine, NESTED[engine], {});
    expect(rendered).toEqual({ subject: 'Hello ', body: '<p> works at </p>' });
  });

  it('returns only the fields it was given', () => {
    expect(renderTemplate('mustache', { subject: 'Hi {{name}}' }, { name: 'Ada' })).toEqual({ subject: 'Hi Ada' });
    expect(renderTemplate('twig', { body: '' }, {})).toEqual({ body: '' });
  });

  it('refuses an unknown engine', () => {
    const message = invalidRequestMessage(() => renderTemplate('erb', { subject: 'x' }, {}));
    expect(message).toContain("'engine' must be one of: mustache, handlebars, twig");
  });

  it.each([
    ['mustache', 'body', '<p>{{#user}}{{name}}</p>'],
    ['handlebars', 'subject', 'Hello {{#if user}}'],
    ['twig', 'body', '<p>{{ user.name </p>'],
  ] as const)('refuses a %s syntax error in the %s', (engine, field, source) => {
    const message = invalidRequestMessage(() => renderTemplate(engine, { [field]: source }, {}));
    expect(message).toContain(`'${field}' is not a valid ${engine} template`);
  });

  it.each([
    ['handlebars', '{{missingHelper user}}', 'Missing helper: "missingHelper"'],
    ['twig', '{{ price|round(1, "sideways") }}', "round filter expects method to be 'floor', 'ceil', or 'common'"],
    ['mustache', '{{__defineGetter__}}', 'Expecting function'],
  ] as const)(
    'turns a %s runtime error into an InvalidRequestError naming engine and field',
    (engine, body, detail) => {
      const message = invalidRequestMessage(() => renderTemplate(engine, { body }, { user: 'Ada', price: 1 }));
      expect(message).toContain(`'body' could not be rendered with ${engine}: `);
      expect(message).toContain(detail);
    },
  );

  it.each([
    ['mustache', '{{> footer}}'],
    ['handlebars', '{{> footer}}'],
  ] as const)('refuses %s partials', (engine, body) => {
    const message = invalidRequestMessage(() => renderTemplate(engine, { body }, {}));
    expect(message).toBe(
      `'body' uses the ${engine} partial '{{> footer}}' (line 1, column 1); partials are not supported`,
    );
  });

  it.each([
    ['{% include "/etc/passwd" %}', "'{% include %}'"],
    ['{% extends "layout.twig" %}', "'{% extends %}'"],
    ['{{ source("/etc/passwd") }}', "'source()'"],
  ])('refuses twig %s at render time', (body, what) => {
    const message = invalidRequestMessage(() => renderTemplate('twig', { body }, {}));
    expect(message).toContain(`'body' uses the twig`);
    expect(message).toContain(what);
    expect(message).toContain('templates cannot load other templates or files');
    expect(message).not.toContain('root:');
  });

  it('renders handlebars prototype properties as empty strings', () => {
    const rendered = renderTemplate(
      'handlebars',
      { body: '[{{constructor.name}}|{{__proto__}}|{{user.constructor.name}}|{{lookup user "constructor"}}]' },
      { user: { name: 'Ada' } },
    );
    expect(rendered).toEqual({ body: '[|||]' });
  });

  it('never lets a twig template reach or call a JavaScript function', () => {
    // Prepare: stock twig.js returns `Function` from this attribute() chain and calls what it builds.
    const exploit =
      '{% set F = attribute(attribute({}, "constructor"), "constructor") %}' +
      '{% set G = F("return process.version") %}{{ G() }}';
    // Stock twig.js renders "[object Object]" for the first (it calls Object()) and a function's source for `F`.
    const lookups =
      '[{{ user.constructor }}|{{ user.constructor.name }}|{{ user.__proto__.constructor.name }}|' +
      '{% set F = attribute(attribute({}, "constructor"), "constructor") %}{{ F }}|{{ attribute(user, "name") }}]';

    // Act
    const exploitMessage = invalidRequestMessage(() => renderTemplate('twig', { body: exploit }, {}));
    const rendered = renderTemplate('twig', { body: lookups }, { user: { name: 'Ada' } });

    // Assess
    expect(exploitMessage).toContain("uses the twig function 'G()'");
    expect(exploitMessage).not.toContain(process.version);
    expect(rendered).toEqual({ body: '[||||Ada]' });
  });

  it('keeps twig state from leaking between fields or into the caller’s variables', () => {
    // Prepare
    const variables = { items: [3, 1, 2] };

    // Act
    const rendered = renderTemplate(
      'twig',
      { subject: '{% set secret = "leaked" %}{{ items|sort|join(",") }}', body: '[{{ secret }}]' },
      variables,
    );

    // Assess
    expect(rendered).toEqual({ subject: '1,2,3', body: '[]' });
    expect(variables.items).toEqual([3, 1, 2]);
  });

  describe('output cap', () => {
    const chunk = 'x'.repeat(1000);
    const underCap = { items: Array.from({ length: MAX_RENDERED_LENGTH / chunk.length - 1 }, () => chunk) };
    const overCap = { items: Array.from({ length: MAX_RENDERED_LENGTH / chunk.length + 1 }, () => chunk) };

    it.each(TEMPLATE_ENGINES)('refuses a field that renders to more than 5,000,000 characters (%s)', (engine) => {
      const message = invalidRequestMessage(() =>
        renderTemplate(engine, { subject: 'ok', body: LOOP[engine] }, overCap),
      );
      expect(message).toBe("'body' renders to more than 5,000,000 characters");
    });

    it.each(TEMPLATE_ENGINES)('renders a field just under the cap (%s)', (engine) => {
      const rendered = renderTemplate(engine, { body: LOOP[engine] }, underCap);
      expect(rendered.body).toHaveLength(MAX_RENDERED_LENGTH - chunk.length);
    });

    it('stops a twig loop over a huge range before building it', () => {
      const message = invalidRequestMessage(() =>
        renderTemplate('twig', { body: '{% for i in 1..100000000 %}x{% endfor %}' }, {}),
      );
      expect(message).toContain(
        "'body' uses twig ranges (a..b, range()) that produce more than 100,000 elements in one render",
      );
    });

    it('counts every repetition of nested twig ranges', () => {
      const body = '{% for i in 1..1000 %}{% for j in range(1, 1000) %}{% endfor %}{% endfor %}';
      const message = invalidRequestMessage(() => renderTemplate('twig', { body }, {}));
      expect(message).toContain('more than 100,000 elements in one render');
    });

    it('refuses a twig range step that never reaches the end', () => {
      const message = invalidRequestMessage(() =>
        renderTemplate('twig', { body: '{% for i in range(1, 10, -1) %}x{% endfor %}' }, {}),
      );
      expect(message).toBe(
        "'body' could not be rendered with twig: the twig range() step must be a positive number, got -1",
      );
    });

    it('still renders ordinary twig ranges', () => {
      const rendered = renderTemplate(
        'twig',
        { body: '{% for i in 1..3 %}{{ i }}{% endfor %}|{{ range(0, 10, 5)|join(",") }}|{{ ("a".."c")|join }}' },
        {},
      );
      expect(rendered).toEqual({ body: '123|0,5,10|abc' });
    });
  });
});

describe('Function: renderTemplate, strict', () => {
  const variables = { user: { name: 'Ada', company: { name: 'Engines Ltd' } } };

  it.each(TEMPLATE_ENGINES)('%s: renders what the variables hold, as without strict', (engine) => {
    expect(renderTemplate(engine, NESTED[engine], variables, { strict: true })).toEqual(
      renderTemplate(engine, NESTED[engine], variables),
    );
  });

  it.each(TEMPLATE_ENGINES)('%s: refuses a variable the template names that is missing, naming it', (engine) => {
    const missing = { user: { name: 'Ada' } };
    // Without strict it renders empty.
    expect(renderTemplate(engine, NESTED[engine], missing).body).toBe('<p>Ada works at </p>');
    const message = invalidRequestMessage(() => renderTemplate(engine, NESTED[engine], missing, { strict: true }));
    expect(message).toContain(engine);
    // Handlebars names the step it could not take ("name" not defined in undefined), with its place.
    expect(message).toMatch(engine === 'handlebars' ? /"name" not defined.* 1:\d+/ : /company/);
    const top = invalidRequestMessage(() =>
      renderTemplate(engine, { body: NESTED[engine].subject }, {}, { strict: true }),
    );
    expect(top).toMatch(engine === 'handlebars' ? /not defined/ : /user/);
  });

  it('mustache: a name found in a section’s item or further out is defined; one found nowhere is not', () => {
    const body = '{{#items}}{{label}} of {{owner}}; {{/items}}';
    expect(
      renderTemplate('mustache', { body }, { owner: 'Ada', items: [{ label: 'a' }, { label: 'b' }] }, { strict: true })
        .body,
    ).toBe('a of Ada; b of Ada; ');
    expect(() => renderTemplate('mustache', { body }, { items: [{ label: 'a' }] }, { strict: true })).toThrow(/owner/);
  });
});

describe('Function: checkTemplate', () => {
  it.each(TEMPLATE_ENGINES)('accepts valid %s templates', (engine) => {
    expect(() => checkTemplate(engine, NESTED[engine])).not.toThrow();
  });

  it('refuses an unknown engine', () => {
    expect(() => checkTemplate('liquid', { body: 'x' })).toThrow(InvalidRequestError);
  });

  it.each([
    // mustache reports where it stopped reading: the end of the template.
    [
      'mustache',
      'body',
      'Hi\n{{user.name',
      "'body' is not a valid mustache template: Unclosed tag at line 2, column 12",
    ],
    [
      'mustache',
      'subject',
      '{{#user}}x',
      `'subject' is not a valid mustache template: Unclosed section "user" at line 1, column 11`,
    ],
    [
      'handlebars',
      'body',
      'Hi\n{{user.name',
      "'body' is not a valid handlebars template: Parse error on line 2: Expecting",
    ],
    [
      'handlebars',
      'subject',
      '{{#if a}}x{{/each}}',
      "'subject' is not a valid handlebars template: if doesn't match each - 1:3",
    ],
    [
      'twig',
      'body',
      'Hi\n{{ user.name',
      "'body' is not a valid twig template: Unable to find closing bracket '}}' opened near line 2, column 3",
    ],
    [
      'twig',
      'subject',
      '{% if a %}x',
      "'subject' is not a valid twig template: Unable to find an end tag for '{% if %}'",
    ],
  ] as const)(
    'refuses a %s syntax error in the %s, naming field, engine and position',
    (engine, field, source, expected) => {
      const message = invalidRequestMessage(() => checkTemplate(engine, { [field]: source }));
      expect(message).toContain(expected);
      expect(message).not.toContain('\n');
    },
  );

  it.each([
    ['{% include "x.twig" %}', "tag '{% include %}'"],
    ['{% embed "x.twig" %}{% endembed %}', "tag '{% embed %}'"],
    ['{% extends "x.twig" %}', "tag '{% extends %}'"],
    ['{% import "x.twig" as forms %}', "tag '{% import %}'"],
    ['{% from "x.twig" import input %}', "tag '{% from %}'"],
    ['{% use "x.twig" %}', "tag '{% use %}'"],
    ['{{ source("/etc/passwd") }}', "function 'source()'"],
    ['{{ include("x.twig") }}', "function 'include()'"],
    ['{{ template_from_string("{{ 1 }}") }}', "function 'template_from_string()'"],
    ['{% set files = [1, source("/etc/passwd")] %}', "function 'source()'"],
  ])('refuses twig %s', (body, what) => {
    const message = invalidRequestMessage(() => checkTemplate('twig', { body: `<p>\n  ${body}` }));
    expect(message).toBe(
      `'body' uses the twig ${what} (line 2, column 3), which is not allowed: templates cannot load other templates or files`,
    );
  });

  it.each([
    ['{{ name|shout }}', "filter '|shout'"],
    ['{% apply shout %}x{% endapply %}', "filter '|shout'"],
    ['{{ shout(name) }}', "function 'shout()'"],
  ])('refuses twig %s, which does not exist', (body, what) => {
    const message = invalidRequestMessage(() => checkTemplate('twig', { subject: body }));
    expect(message).toBe(`'subject' uses the twig ${what} (line 1, column 1), which does not exist`);
  });

  it.each([
    ['mustache', 'Hi {{#user}}\n{{> card}}{{/user}}', "'{{> card}}' (line 2, column 1)"],
    ['mustache', '{{=<% %>=}}<%> card%>', "'{{> card}}' (line 1, column 12)"],
    ['handlebars', 'Hi\n  {{> card}}', "'{{> card}}' (line 2, column 3)"],
    ['handlebars', '{{#> layout}}x{{/layout}}', "'{{#> layout}}' (line 1, column 1)"],
    ['handlebars', '{{#*inline "card"}}x{{/inline}}', "'{{#* inline}}' (line 1, column 1)"],
  ] as const)('refuses %s partials: %j', (engine, body, where) => {
    const message = invalidRequestMessage(() => checkTemplate(engine, { body }));
    expect(message).toBe(`'body' uses the ${engine} partial ${where}; partials are not supported`);
  });
});
