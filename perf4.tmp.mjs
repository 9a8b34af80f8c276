import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const domino = require('@mixmark-io/domino');
const TurndownService = require('turndown');
const MB = 1 << 20;
const fill = (unit) => unit.repeat(Math.ceil(MB / unit.length));
const s = fill('<p>Hello <b>world</b> and <a href="https://x.com/y">link</a> text &amp; more.</p>\n');
for (let i = 0; i < 3; i++) {
const td = new TurndownService();
let t = performance.now();
const out = td.turndown(s);
console.log('turndown', (performance.now() - t).toFixed(0), out.length);
}
