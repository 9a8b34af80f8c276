import { cleanMessageBody } from '#shared/mail/clean';
const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const body = process.argv[2] === 'p' ? fill('<p>Hello <b>world</b> and <a href="https://x.com/y">link</a> text &amp; more.</p>\n') : '<div>' + fill('Some line of text<br>\n') + '</div>';
for (let i = 0; i < 4; i++) { const t = performance.now(); cleanMessageBody(body); console.log((performance.now() - t).toFixed(0)); }
