import sanitizeHtml from 'sanitize-html';
import TurndownService from 'turndown';
const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const body = fill('<p>Hello <b>world</b> and <a href="https://x.com/y">link</a> text &amp; more.</p>\n');
for (let i = 0; i < 2; i++) {
let t = performance.now();
const s = sanitizeHtml(body, { allowedTags: ['p','b','a'], allowedAttributes: {a:['href']} });
console.log('sanitize plain', (performance.now() - t).toFixed(0));
t = performance.now();
const s2 = sanitizeHtml(body, { allowedTags: ['p','b','a'], allowedAttributes: {a:['href']}, transformTags: {'*': (tagName, attribs) => ({tagName, attribs})} , parseStyleAttributes: false});
console.log('sanitize transform', (performance.now() - t).toFixed(0));
t = performance.now();
const td = new TurndownService();
const out = td.turndown(s);
console.log('turndown', (performance.now() - t).toFixed(0), out.length);
}
