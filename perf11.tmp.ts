import sanitizeHtml from 'sanitize-html';
import { createRequire } from 'node:module';
import * as m from '#shared/mail/cleanperf.tmp';
const require = createRequire(import.meta.url);
const domino = require('@mixmark-io/domino');
const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const shapes: Record<string, string> = { p: fill('<p>Hello <b>world</b> and <a href="https://x.com/y">link</a> text &amp; more.</p>\n'), li: fill('<li>x'), hr: fill('<hr>'), bq: fill('<p>a</p><blockquote>q</blockquote>'), table: fill('<table><tr><td>a</td><td>b <b>c</b></td></tr></table>') };
const body = shapes[process.argv[2]!]!;
const opts = m.resolveOptions({ ignore_tables: false });
const c = m.cutHistory(sanitizeHtml(m.flattenDeepNesting(body), m.sanitizeOptions(opts))).split('\uE001').join('<p>\uE001</p>');
console.log(c.slice(0, 200));
for (let i = 0; i < 3; i++) {
let t = performance.now();
const doc = domino.createDocument('<x-turndown id="turndown-root">' + c + '</x-turndown>');
console.log('parse', (performance.now() - t).toFixed(0));
t = performance.now();
const root = doc.getElementById('turndown-root');
const clone = root.cloneNode(true);
console.log('clone', (performance.now() - t).toFixed(0));
t = performance.now();
m.converter(opts).turndown(root);
console.log('turndown(node)', (performance.now() - t).toFixed(0));
}
