import { describe, expect, it } from 'vitest';
import { htmlToText, snippetOf } from '#shared/mailbox/text';
import { cleanMessageBody } from '#shared/mail/clean';
import { decodeEntities } from '#shared/mail/entities';

describe('Function: decodeEntities', () => {
  it('decodes named entities, case-sensitively', () => {
    expect(decodeEntities('Caf&eacute; &amp; bar &lt;b&gt; &quot;q&quot; &apos;a&apos;')).toBe(
      'Café & bar <b> "q" \'a\'',
    );
    expect(decodeEntities('It&rsquo;s &ldquo;fine&rdquo; &hellip; &mdash; &euro;5 &copy;')).toBe(
      'It’s “fine” … — €5 ©',
    );
    expect(decodeEntities('&Auml;&auml; &AMP; &LT;')).toBe('Ää & <');
    expect(decodeEntities('a&nbsp;b')).toBe('a\u00a0b');
  });

  it('decodes decimal and hexadecimal references', () => {
    expect(decodeEntities('&#8364; &#x41; &#X1F600; &#065;')).toBe('€ A 😀 A');
    // 128-159 are Windows-1252, as browsers read them.
    expect(decodeEntities('it&#146;s')).toBe('it’s');
  });

  it('turns numbers that are no character into U+FFFD', () => {
    expect(decodeEntities('&#0; &#xD800; &#x110000;')).toBe('\uFFFD \uFFFD \uFFFD');
  });

  it('leaves unknown names and malformed references as written', () => {
    expect(decodeEntities('&bogus; &constructor; &toString; &amp &#xZZ; &#12345678; AT&T &;')).toBe(
      '&bogus; &constructor; &toString; &amp &#xZZ; &#12345678; AT&T &;',
    );
  });

  it('decodes once: &amp;lt; is the text &lt;', () => {
    expect(decodeEntities('&amp;lt;b&amp;gt; &amp;amp;')).toBe('&lt;b&gt; &amp;');
  });
});

describe('One decoder for snippets and cleaned bodies', () => {
  it('shows typographic entities decoded in search text and snippets', () => {
    expect(snippetOf(htmlToText('<p>We&rsquo;re &ldquo;in&rdquo; &ndash; see you&hellip;</p>'))).toBe(
      'We’re “in” – see you…',
    );
  });

  it('decodes the same way in /messages/clean', () => {
    expect(cleanMessageBody('We&rsquo;re &bogus; &#146;', { html_as_markdown: false }, true)).toBe('We’re &bogus; ’');
  });
});
