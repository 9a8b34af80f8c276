import { cleanMessageBody } from '#shared/mail/clean';
const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const shape = process.argv[2] ?? 'p';
const body = shape === 'p' ? fill('<p>Hello <b>world</b> and <a href="https://x.com/y">link</a> text &amp; more.</p>\n') : shape === 'li' ? fill('<li>x') : shape === 'hr' ? fill('<hr>') : shape === 'bq' ? fill('<p>a</p><blockquote>q</blockquote>') : fill('<table><tr><td>a</td><td>b <b>c</b></td></tr></table>');
for (let i = 0; i < 3; i++) { const t = performance.now(); cleanMessageBody(body, { ignore_tables: false }); console.log((performance.now() - t).toFixed(0)); }
