import fc from 'fast-check';
import sanitizeHtml from 'sanitize-html';
import * as m from '#shared/mail/cleanperf.tmp';
import { cleanMessageBody } from '#shared/mail/clean';
const pieces = ['<div>', '</div>', '<p>', '</p>', '<b>', '</b>', '<blockquote>', '</blockquote>', '<span hidden>', '</span>', '<img src="https://x/p.gif" width=1 height=1>', '<img src="https://x/a.png" alt="A">', '<table>', '<tr>', '<td>', '</td>', '</table>', '<ul>', '<li>', '</ul>', '<a href="https://x">', '</a>', '<script>evil()</script>', '<script>evil2("</div>")', 'text', ' ', '\n', '&amp;', '&nbsp;', '<br>', '<hr>', 'From: x', '<div class="gmail_quote">', '<div id="divRplyFwdMsg">', '<!--', '-->', '<', '>', '"', '<pre>', '</pre>', '<h1>', '-- ', 'Thanks,', '> q', '<font style="display:none">', '</font>', '<o:p>', '<style>x{}</style>', '<style>x{}', '<i>', '<code>', '</code>'];
const TAG_RE = /<(\/?)([a-z][a-z0-9-]*)[^>]*?( \/)?>/g;
let checked = 0;
fc.assert(fc.property(fc.array(fc.constantFrom(...pieces), { maxLength: 40 }), fc.record({ ignore_links: fc.boolean(), ignore_images: fc.boolean(), images_as_markdown: fc.boolean(), ignore_tables: fc.boolean(), remove_conclusion_phrases: fc.boolean(), html_as_markdown: fc.boolean() }), (parts, options) => {
  const html = parts.join('');
  const opts = m.resolveOptions(options);
  const s = sanitizeHtml(m.flattenDeepNesting(html), m.sanitizeOptions(opts));
  // balanced?
  const stack: string[] = [];
  for (const t of s.matchAll(TAG_RE)) { if (t[3]) continue; if (t[1]) { const top = stack.pop(); if (top !== t[2]) throw new Error(`unbalanced ${top} vs ${t[2]} in ${JSON.stringify(html)} -> ${s}`); } else stack.push(t[2]!); }
  if (stack.length) throw new Error(`unclosed ${stack} in ${s}`);
  const out = cleanMessageBody(html, options);
  if (typeof out !== 'string') throw new Error('not string');
  if (out.includes('evil') || out.includes('x{}')) throw new Error(`script/style leaked: ${JSON.stringify(html)} -> ${JSON.stringify(out)}`);
  if (/[ \t]$/m.test(out) || /\n\n\n/.test(out) || out !== out.trim()) throw new Error(`whitespace ${JSON.stringify(out)}`);
  if (/[\uE001-\uE003]/.test(out)) throw new Error('marker leaked ' + JSON.stringify(html));
  checked++;
}), { numRuns: 20000 });
console.log('ok', checked);
