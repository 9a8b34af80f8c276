import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const domino = require('@mixmark-io/domino');
import TurndownService from 'turndown';
const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const s = fill('<p>Hello <b>world</b> and <a href="https://x.com/y">link</a> text &amp; more.</p>\n');
for (let i = 0; i < 2; i++) {
let t = performance.now();
const doc = domino.createDocument('<x-turndown id="turndown-root">' + s + '</x-turndown>');
console.log('domino parse', (performance.now() - t).toFixed(0));
t = performance.now();
const root = doc.getElementById('turndown-root');
const td = new TurndownService();
const out = td.turndown(root);
console.log('turndown on node (clones)', (performance.now() - t).toFixed(0), out.length);
}
