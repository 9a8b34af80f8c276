import sanitizeHtml from 'sanitize-html';
import * as m from '#shared/mail/cleanperf.tmp';
const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const body = process.argv[2] === 'p' ? fill('<p>Hello <b>world</b> and <a href="https://x.com/y">link</a> text &amp; more.</p>\n') : '<div>' + fill('Some line of text<br>\n') + '</div>';
const opts = m.resolveOptions({});
const c = m.cutHistory(sanitizeHtml(m.flattenDeepNesting(body), m.sanitizeOptions(opts)));
for (let i = 0; i < 3; i++) { const t = performance.now(); const md = m.converter(opts).turndown(c); m.cleanText(md, opts); console.log((performance.now() - t).toFixed(0)); }
