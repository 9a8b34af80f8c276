import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const sanitizeHtml = require('sanitize-html');
const TurndownService = require('turndown');
const MB = 1 << 20;
const fill = (unit) => unit.repeat(Math.ceil(MB / unit.length));
const shapes = { deepDivs: fill('<div>x'), deepB: fill('<b><i>x'), ul: fill('<ul><li>x'), nested: fill('<table><tr><td>'), hrsDiv: fill('<hr><div> <b> '), li: fill('<li>x') };
for (const [name, body] of Object.entries(shapes)) {
  let t = performance.now();
  const s = sanitizeHtml(body, { allowedTags: ['div','b','i','ul','li','table','tr','td','hr'], nestingLimit: 64, parseStyleAttributes: false });
  const t1 = performance.now() - t; t = performance.now();
  const out = new TurndownService().turndown(s);
  console.log(name, 'sanitize', t1.toFixed(0), 'turndown', (performance.now() - t).toFixed(0), s.length, out.length);
}
