import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const sanitizeHtml = require('sanitize-html');
const MB = 1 << 20;
const fill = (unit) => unit.repeat(Math.ceil(MB / unit.length));
for (const body of [fill('<p>a</p><blockquote>q</blockquote>'), fill('<p>Hello world</p><img src="https://x/p.gif" width=1 height=1>')]) {
let t = performance.now();
const out = sanitizeHtml(body, { allowedTags: ['p','blockquote','img'], allowedAttributes: {'*':['data-sb']}, transformTags: {'*': (tagName, attribs) => ({ tagName, attribs: (tagName==='blockquote'||tagName==='img') ? {'data-sb':'drop'} : {} })}, exclusiveFilter: (f) => f.attribs['data-sb'] === 'drop', parseStyleAttributes: false });
console.log((performance.now()-t).toFixed(0), out.length);
}
