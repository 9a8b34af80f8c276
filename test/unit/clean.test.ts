import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cleanMessageBody, type CleanOptions } from '#shared/mail/clean';

const clean = (body: string, options?: CleanOptions) => cleanMessageBody(body, options);
const cleanPlain = (body: string, options?: CleanOptions) => cleanMessageBody(body, options, true);

/** Every output must satisfy these, whatever the input. */
function expectNormalised(out: string) {
  expect(out).toBe(out.trim());
  expect(out).not.toMatch(/[ \t]$/m);
  expect(out).not.toMatch(/\n\n\n/);
  expect(out).not.toMatch(/[\uE001\uE002]/);
}

describe('Function: cleanMessageBody', () => {
  describe('defaults and trivial input', () => {
    it.each([
      ['an empty body', ''],
      ['whitespace only', ' \n\t\u00a0 '],
    ])('returns an empty string for %s', (_name, body) => {
      expect(clean(body)).toBe('');
      expect(cleanPlain(body)).toBe('');
    });

    it('returns an empty string for markup without text', () => {
      expect(clean('<div><br></div><p>&nbsp;</p><img src="https://x.com/a.png">')).toBe('');
    });

    it('treats explicit undefined options as the defaults', () => {
      const body = '<p>See <a href="https://x.com">the doc</a>.</p>';
      expect(clean(body, { ignore_links: undefined, html_as_markdown: undefined })).toBe(clean(body));
    });
  });

  describe('conversion (html_as_markdown)', () => {
    const body =
      '<h2>Agenda</h2><p>Some <b>bold</b>, <em>em</em> and <code>x*y</code>.</p>' +
      '<ul><li>one</li><li>two<ul><li>inner</li></ul></li></ul><ol start="3"><li>third</li><li>fourth</li></ol>' +
      '<pre><code>const a = 1;\n  return a;</code></pre><hr><p>after_rule</p>';

    it('writes markdown by default: ATX headings, "-" bullets, fenced code, escapes', () => {
      expect(clean(body)).toBe(
        [
          '## Agenda',
          '',
          'Some **bold**, _em_ and `x*y`.',
          '',
          '- one',
          '- two',
          '  - inner',
          '',
          '3. third',
          '4. fourth',
          '',
          '```',
          'const a = 1;',
          '  return a;',
          '```',
          '',
          '---',
          '',
          'after\\_rule',
        ].join('\n'),
      );
    });

    it('writes plain text without markdown syntax when html_as_markdown is false', () => {
      expect(clean(body, { html_as_markdown: false })).toBe(
        [
          'Agenda',
          '',
          'Some bold, em and x*y.',
          '',
          '- one',
          '- two',
          '  - inner',
          '',
          '3. third',
          '4. fourth',
          '',
          'const a = 1;',
          '  return a;',
          '',
          'after_rule',
        ].join('\n'),
      );
    });

    it('keeps the whitespace of a <pre> without <code> in a fence', () => {
      expect(clean('<pre>a  b\n  c</pre>')).toBe('```\na  b\n  c\n```');
    });
  });

  describe('option: ignore_links', () => {
    const body =
      '<p>Read <a href="https://x.com/a_(b)">the doc</a> or mail <a href="mailto:ann@x.com">ann@x.com</a>.</p>';

    it('keeps only the link text by default', () => {
      expect(clean(body)).toBe('Read the doc or mail ann@x.com.');
      expect(clean(body, { html_as_markdown: false })).toBe('Read the doc or mail ann@x.com.');
    });

    it('writes markdown links when false', () => {
      expect(clean(body, { ignore_links: false })).toBe(
        'Read [the doc](https://x.com/a_\\(b\\)) or mail [ann@x.com](mailto:ann@x.com).',
      );
    });

    it('writes "text (url)" in plain text when false, without repeating a bare address', () => {
      expect(clean(body, { ignore_links: false, html_as_markdown: false })).toBe(
        'Read the doc (https://x.com/a_(b)) or mail ann@x.com.',
      );
    });

    it('never keeps a javascript: URL', () => {
      const out = clean('<p><a href="javascript:alert(1)">click</a></p>', { ignore_links: false });
      expect(out).toBe('click');
    });
  });

  describe('options: ignore_images and images_as_markdown', () => {
    const body = '<p>Logo: <img src="https://x.com/logo.png" alt="Acme logo"> end</p>';

    it('drops images by default', () => {
      expect(clean(body)).toBe('Logo: end');
    });

    it('writes the alt text when images are kept', () => {
      expect(clean(body, { ignore_images: false })).toBe('Logo: Acme logo end');
      expect(clean(body, { ignore_images: false, html_as_markdown: false })).toBe('Logo: Acme logo end');
    });

    it('writes markdown images when images_as_markdown is true', () => {
      expect(clean(body, { ignore_images: false, images_as_markdown: true })).toBe(
        'Logo: ![Acme logo](https://x.com/logo.png) end',
      );
    });

    it('ignores images_as_markdown while images are ignored, and in plain text', () => {
      expect(clean(body, { images_as_markdown: true })).toBe('Logo: end');
      expect(clean(body, { ignore_images: false, images_as_markdown: true, html_as_markdown: false })).toBe(
        'Logo: Acme logo end',
      );
    });

    it('never writes a data: image source', () => {
      const out = clean('<p><img src="data:image/png;base64,AAAA" alt="inline"></p>', {
        ignore_images: false,
        images_as_markdown: true,
      });
      expect(out).toBe('inline');
    });
  });

  describe('option: ignore_tables', () => {
    const body =
      '<p>Order:</p><table><tr><th>Item</th><th>Qty</th></tr><tr><td>Apple</td><td>3</td></tr>' +
      '<tr><td></td><td></td></tr></table><p>Thanks for shopping.</p>';

    it('drops tables with their content by default', () => {
      expect(clean(body)).toBe('Order:\n\nThanks for shopping.');
    });

    it('keeps cell text separated by " | " when false', () => {
      expect(clean(body, { ignore_tables: false })).toBe('Order:\n\nItem | Qty\nApple | 3\n\nThanks for shopping.');
      expect(clean(body, { ignore_tables: false, html_as_markdown: false })).toBe(
        'Order:\n\nItem | Qty\nApple | 3\n\nThanks for shopping.',
      );
    });

    it('keeps the lines of single-cell layout rows', () => {
      const layout = '<table><tr><td><p>Hello</p><p>World</p></td></tr></table>';
      expect(clean(layout, { ignore_tables: false })).toBe('Hello\n\nWorld');
    });
  });

  describe('active content and noise', () => {
    it('removes script, style, head, title, noscript, iframe, object and comments with their contents', () => {
      const body =
        '<html><head><title>Secret title</title><style>.a{color:red}</style>' +
        '<script>var leaked = "script text";</script></head><body>' +
        '<p>Visible<script type="text/javascript">alert("also script text")</script></p>' +
        '<noscript>Enable JS</noscript><iframe src="https://x.com">frame text</iframe>' +
        '<object data="x.swf">object text</object><!-- a comment --><style>p{}</style><p>Also visible</p></body></html>';
      const out = clean(body);
      expect(out).toBe('Visible\n\nAlso visible');
      for (const hidden of [
        'Secret',
        'color',
        'script text',
        'alert',
        'Enable JS',
        'frame text',
        'object text',
        'comment',
      ]) {
        expect(out).not.toContain(hidden);
      }
    });

    it('removes the text of an unclosed <script>', () => {
      expect(clean('<p>Hi</p><script>document.write("never")')).toBe('Hi');
    });

    it.each([
      ['display:none', '<div style="color:red; display: none !important">preheader</div>'],
      ['visibility:hidden', '<span style="visibility:hidden">ghost</span>'],
      ['the hidden attribute', '<p hidden>hidden paragraph</p>'],
      ['a hidden unknown tag', '<o:p style="display:none">office</o:p>'],
    ])('removes elements hidden with %s', (_name, hidden) => {
      expect(clean(`<p>Before</p>${hidden}<p>After</p>`)).toBe('Before\n\nAfter');
    });

    it.each([
      ['width/height attributes of 1', '<img src="https://t.x.com/o.gif" width="1" height="1" alt="pixel">'],
      ['width/height of 0', '<img src="https://t.x.com/o.gif" width="0" height="0" alt="pixel">'],
      ['a 1px inline style', '<img src="https://t.x.com/o.gif" style="width:1px;height:1px" alt="pixel">'],
      ['a single 1px side', '<img src="https://t.x.com/o.gif" height="1" alt="pixel">'],
    ])('removes tracking pixels with %s even when images are kept', (_name, pixel) => {
      const options = { ignore_images: false, images_as_markdown: true };
      expect(clean(`<p>Hi ${pixel}<img src="https://x.com/a.png" width="200" alt="photo"></p>`, options)).toBe(
        'Hi ![photo](https://x.com/a.png)',
      );
    });
  });

  describe('quoted history', () => {
    it('removes a Gmail quote with its attribution', () => {
      const body =
        '<div dir="ltr">Thursday works.</div><br><div class="gmail_quote gmail_quote_container">' +
        '<div dir="ltr" class="gmail_attr">On Tue, 3 Mar 2026 at 10:00, Ann &lt;<a href="mailto:ann@x.com">ann@x.com</a>&gt; wrote:<br></div>' +
        '<blockquote class="gmail_quote" style="margin:0 0 0 .8ex">Does Thursday work?</blockquote></div>';
      expect(clean(body)).toBe('Thursday works.');
    });

    it('removes an Apple Mail quote (blockquote type="cite") and the attribution above it', () => {
      const body =
        '<div dir="ltr">Perfect.</div><div dir="ltr"><br><div>On 3 Mar 2026, at 10:00, Ann &lt;ann@x.com&gt; wrote:</div>' +
        '<blockquote type="cite"><div dir="ltr">Here is the agenda.</div></blockquote></div>';
      expect(clean(body)).toBe('Perfect.');
    });

    it('keeps a reply written below a removed quote', () => {
      const body =
        '<p>On Tue, 3 Mar 2026, Ann &lt;ann@x.com&gt; wrote:</p><blockquote>Lunch?</blockquote><p>Yes, noon.</p>';
      expect(clean(body)).toBe('Yes, noon.');
    });

    it('removes a plain <blockquote> in the middle of a message', () => {
      expect(clean('<p>Top</p><blockquote><p>quoted</p></blockquote><p>Bottom</p>')).toBe('Top\n\nBottom');
    });

    it('removes Outlook web history from #appendonsend / #divRplyFwdMsg on', () => {
      const body =
        '<div>Sounds good.</div><div id="appendonsend"></div><hr style="display:inline-block;width:98%">' +
        '<div id="divRplyFwdMsg"><b>From:</b> Bob<br><b>Sent:</b> Tuesday</div><div>Can we meet?</div>';
      expect(clean(body)).toBe('Sounds good.');
      expect(clean(body.replace('<div id="appendonsend"></div>', ''))).toBe('Sounds good.');
    });

    it('cuts at an <hr> followed by "From:"', () => {
      const body = '<p>New text</p><hr><p><span><b>From:</b></span> Bob<br><b>Sent:</b> x</p><p>Old text</p>';
      expect(clean(body)).toBe('New text');
    });

    it('keeps an <hr> that does not start a reply header', () => {
      expect(clean('<p>One</p><hr><p>Two</p>', { html_as_markdown: false })).toBe('One\n\nTwo');
    });

    it('cuts at an Outlook desktop reply header (top-bordered div)', () => {
      const body =
        '<p class="MsoNormal">Attached.<o:p></o:p></p><div><div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0cm 0cm 0cm">' +
        '<p class="MsoNormal"><b>From:</b> Bob<br><b>Sent:</b> Tuesday<br><b>To:</b> Dave</p></div></div><p>Send the file.</p>';
      expect(clean(body)).toBe('Attached.');
    });

    it('removes a Thunderbird quote with its moz-cite-prefix', () => {
      const body =
        '<p>Agreed.</p><div class="moz-cite-prefix">On 03/03/2026 10:00, Ann wrote:<br></div><blockquote type="cite">Shall we?</blockquote>';
      expect(clean(body)).toBe('Agreed.');
    });

    it('removes a Yahoo quote', () => {
      expect(
        clean('<div>Got it.</div><div class="yahoo_quoted"><div>On Tuesday, Ann wrote:</div><div>old</div></div>'),
      ).toBe('Got it.');
    });

    it('removes "> " lines inside HTML', () => {
      expect(clean('<div>Reply</div><div>&gt; quoted line</div><div>&gt;&gt; older</div>')).toBe('Reply');
    });
  });

  describe('quoted history in plain text', () => {
    it('removes an "On … wrote:" section with its quoted lines', () => {
      expect(cleanPlain('Sure.\n\nOn Tue, 3 Mar 2026 at 10:00, Ann <ann@x.com> wrote:\n> Lunch?\n>\n> Ann\n')).toBe(
        'Sure.',
      );
    });

    it('recognises an attribution wrapped onto two lines', () => {
      expect(cleanPlain('Sure.\n\nOn Tue, 3 Mar 2026 at 10:00, Ann Smith <\nann@x.com> wrote:\n\n> Lunch?')).toBe(
        'Sure.',
      );
    });

    it('cuts everything after an attribution whose quote is not prefixed', () => {
      expect(cleanPlain('Sure.\n\nOn Tue, 3 Mar 2026 at 10:00, Ann wrote:\nLunch?\nAnn')).toBe('Sure.');
    });

    it('keeps interleaved answers between quoted lines', () => {
      const body = 'On Tue, Ann <ann@x.com> wrote:\n> Report?\nAttached.\n\n> Slides?\nTomorrow.';
      expect(cleanPlain(body)).toBe('Attached.\n\nTomorrow.');
    });

    it.each([
      ['French', 'Le mar. 3 mars 2026 à 10:00, Ann <ann@x.com> a écrit :'],
      ['German', 'Am 03.03.2026 um 10:00 schrieb Ann <ann@x.com>:'],
      ['Spanish', 'El mar, 3 mar 2026 a las 10:00, Ann (<ann@x.com>) escribió:'],
    ])('recognises a %s attribution', (_language, attribution) => {
      expect(cleanPlain(`Merci.\n\n${attribution}\n> Bonjour`)).toBe('Merci.');
    });

    it.each([
      ['-----Original Message-----', 'Reply.\n\n-----Original Message-----\nFrom: Bob\nSent: Tuesday\nold'],
      [
        'an Outlook underscore rule',
        'Reply.\n\n________________________________\nFrom: Bob\nSent: Tuesday\nTo: Ann\nold',
      ],
      [
        'a From:/Sent:/To: header block',
        'Reply.\n\nFrom: Bob <bob@x.com>\nSent: Tuesday, 3 March 2026\nTo: Ann\nSubject: x\n\nold',
      ],
    ])('cuts at %s', (_name, body) => {
      expect(cleanPlain(body)).toBe('Reply.');
    });

    it('keeps a lone "From:" line that is not a header block', () => {
      expect(cleanPlain('From: the team, with love\n\nSee you.')).toBe('From: the team, with love\n\nSee you.');
    });
  });

  describe('signatures and option: remove_conclusion_phrases', () => {
    it('removes a Gmail signature', () => {
      const body =
        '<div>See you.</div><span class="gmail_signature_prefix">-- </span><br>' +
        '<div class="gmail_signature" data-smartmail="gmail_signature">Bob Jones<br>CEO</div>';
      expect(clean(body)).toBe('See you.');
      expect(clean(body, { remove_conclusion_phrases: false })).toBe('See you.');
    });

    it('cuts at the "-- " delimiter, in HTML and in plain text, whatever the option', () => {
      expect(clean('<p>See you.</p><p>-- <br>Bob<br>+1 555</p>', { remove_conclusion_phrases: false })).toBe(
        'See you.',
      );
      expect(cleanPlain('See you.\n-- \nBob\n+1 555', { remove_conclusion_phrases: false })).toBe('See you.');
      expect(cleanPlain('See you.\n--\nBob')).toBe('See you.');
    });

    it('keeps "--" inside a line and longer dash rules', () => {
      expect(cleanPlain('a -- b\n---\nc')).toBe('a -- b\n---\nc');
    });

    it.each([
      'Best regards,',
      'Kind regards',
      'KIND REGARDS!',
      'Thanks,',
      'Thanks!',
      'Thank you.',
      'Cheers',
      'Best,',
      'Sincerely,',
    ])('removes the closing phrase "%s" and what follows', (phrase) => {
      expect(cleanPlain(`Hi Ann,\n\nThe report is attached.\n\n${phrase}\nBob\nAcme Inc.`)).toBe(
        'Hi Ann,\n\nThe report is attached.',
      );
    });

    it('recognises closing phrases in HTML, also in bold', () => {
      expect(clean('<p>Done.</p><p><strong>Best regards,</strong><br>Bob<br>CEO</p>')).toBe('Done.');
    });

    it('removes "Sent from my iPhone" and what follows', () => {
      expect(clean('<div>On my way</div><div><br><div>Sent from my iPhone</div></div>')).toBe('On my way');
      expect(cleanPlain('Sent from my iPhone')).toBe('');
    });

    it('keeps phrases that are part of a sentence', () => {
      const body = 'Thanks for the report, it looks great.\nBest regards to your team from all of us.';
      expect(cleanPlain(body)).toBe(body);
    });

    it('keeps a closing phrase that is the whole message', () => {
      expect(cleanPlain('Thanks!')).toBe('Thanks!');
      expect(cleanPlain('Thanks!\n\nSee the file below.\n\nBest,\nBob')).toBe('Thanks!\n\nSee the file below.');
    });

    it('keeps closing phrases and signature blocks when false', () => {
      const body = 'Done.\n\nBest regards,\nBob\n\nSent from my iPhone';
      expect(cleanPlain(body, { remove_conclusion_phrases: false })).toBe(body);
    });
  });

  describe('plain-text bodies', () => {
    it('does not interpret markup in a plain-text body', () => {
      expect(cleanPlain('Use <b>bold</b> or <script>x</script> in HTML.')).toBe(
        'Use <b>bold</b> or <script>x</script> in HTML.',
      );
    });

    it('keeps line structure and markdown characters untouched', () => {
      expect(cleanPlain('Line *one*\nline_two\n  indented')).toBe('Line *one*\nline_two\n  indented');
    });

    it('treats an "HTML" body without any tag as plain text', () => {
      expect(clean('Hi\nthere\n\n> quoted\n\nBye')).toBe('Hi\nthere\n\nBye');
      expect(clean('Mail <ann@x.com> or see <https://x.com>\nBye')).toBe(
        'Mail <ann@x.com> or see <https://x.com>\nBye',
      );
    });
  });

  describe('entities and whitespace', () => {
    it('decodes HTML entities and turns &nbsp; into spaces', () => {
      expect(clean('<p>Caf&eacute; &amp; bar&nbsp;&lt;tag&gt; &quot;q&quot; &#8364; &#x41;</p>')).toBe(
        'Café & bar <tag> "q" € A',
      );
    });

    it('decodes entities in plain-text bodies and leaves unknown ones', () => {
      expect(cleanPlain('AT&amp;T&nbsp;rocks &#x1F600; &bogus;')).toBe('AT&T rocks 😀 &bogus;');
    });

    it('removes trailing spaces, collapses blank lines, normalises CRLF and trims', () => {
      expect(cleanPlain('\r\n\r\n  Hello   \r\n\r\n\r\n\r\nWorld\u00a0\u00a0\r\n\u200b\n\n')).toBe('Hello\n\nWorld');
      expect(clean('<p>&nbsp;</p><p>A&nbsp;&nbsp;</p><p>&nbsp;</p><p>&nbsp;</p><div><br><br><br></div><p>B</p>')).toBe(
        'A\n\nB',
      );
    });

    it('ignores forged internal markers in the input', () => {
      expect(clean('<p>a\uE001b</p><blockquote>q</blockquote><p>\uE002c</p>')).toBe('ab\n\nc');
    });
  });

  describe('robustness', () => {
    it.each([
      ['unclosed tags', '<div><p>Unclosed <b>bold <i>italic'],
      ['stray closing tags', '</span></div>Text</p></table>'],
      ['broken attributes', '<p class="a>Text <img src=">'],
      ['garbage', '<<>><</ <!-- <![CDATA[ x ]]> &#xZZ; &#99999999; </'],
      ['broken tables', '<table><td>cell<tr>row</p>after'],
      ['an unclosed quote', '<p>Top</p><blockquote><p>quoted'],
    ])('does not throw on %s', (_name, body) => {
      for (const options of [{}, { ignore_tables: false, html_as_markdown: false, ignore_links: false }]) {
        const out = clean(body, options);
        expect(typeof out).toBe('string');
        expectNormalised(out);
      }
    });

    it('keeps the text of unclosed tags', () => {
      expect(clean('<div><p>Unclosed <b>bold <i>italic')).toBe('Unclosed **bold _italic_**');
    });

    it('never throws and always returns normalised text (property)', () => {
      const pieces = [
        '<div>',
        '</div>',
        '<p>',
        '</p>',
        '<b>',
        '</b>',
        '<blockquote>',
        '</blockquote>',
        '<span hidden>',
        '</span>',
        '<img src="https://x/p.gif" width=1 height=1>',
        '<img src="https://x/a.png" alt="A">',
        '<table>',
        '<tr>',
        '<td>',
        '</td>',
        '</table>',
        '<ul>',
        '<li>',
        '</ul>',
        '<a href="https://x">',
        '</a>',
        '<script>secret()</script>',
        '<style>p{}</style>',
        'text',
        ' ',
        '\n',
        '&amp;',
        '&nbsp;',
        '<br>',
        '<hr>',
        'From: x',
        '<div class="gmail_quote">',
        '<div id="divRplyFwdMsg">',
        '<!--',
        '-->',
        '>',
        '"',
        '<pre>',
        '</pre>',
        '<h1>',
        '-- ',
        'Thanks,',
        '> q',
        '\uE001',
      ];
      fc.assert(
        fc.property(
          fc.array(fc.constantFrom(...pieces), { maxLength: 30 }),
          fc.record({
            ignore_links: fc.boolean(),
            ignore_images: fc.boolean(),
            images_as_markdown: fc.boolean(),
            ignore_tables: fc.boolean(),
            remove_conclusion_phrases: fc.boolean(),
            html_as_markdown: fc.boolean(),
          }),
          fc.boolean(),
          (parts, options, isPlaintext) => {
            const out = cleanMessageBody(parts.join(''), options, isPlaintext);
            expectNormalised(out);
            if (!isPlaintext) expect(out).not.toContain('secret');
          },
        ),
        { numRuns: 300 },
      );
    });
  });

  describe('huge input (1 MB)', () => {
    const MB = 1 << 20;
    const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));

    it.each([
      [
        'paragraphs',
        fill('<p>Hello <b>world</b>, see <a href="https://x.com">this</a> &amp; more.</p>\n'),
        'Hello **world**, see this & more.',
      ],
      ['one long text node', `<p>${'x'.repeat(MB)}</p>`, 'x'.repeat(100)],
      ['a megabyte of unclosed nested tags', fill('<div><b><a href="https://x.com">x'), 'x'],
      ['a megabyte of tiny elements', fill('<li>x<br><hr>'), 'x'],
    ])('returns for %s', (_name, body, expected) => {
      const out = clean(body);
      expect(out.length).toBeGreaterThan(0);
      expect(out).toContain(expected);
    });

    it('returns for a plain-text body', () => {
      const out = cleanPlain(fill('A line of text\n> quoted\n\n'));
      expect(out.startsWith('A line of text\n\nA line of text')).toBe(true);
      expect(out).not.toContain('quoted');
    });
  });
});
