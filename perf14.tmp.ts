import sanitizeHtml from 'sanitize-html';
import * as m from '#shared/mail/cleanperf.tmp';
const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const shapes: Record<string, string> = { br: '<div>' + fill('Some line of text<br>\n') + '</div>', divs: fill('<div>Hello there, this is a line of the message.</div>\n') , p: fill('<p>Hello <b>world</b> and <a href="https://x.com/y">link</a> text &amp; more.</p>\n')};
for (const [name, body] of Object.entries(shapes)) for (let i = 0; i < 2; i++) {
  const opts = m.resolveOptions({});
  let t = performance.now(); const times: string[] = [];
  const lap = (l: string) => { times.push(`${l}=${(performance.now() - t).toFixed(0)}`); t = performance.now(); };
  const f = m.flattenDeepNesting(body); lap('flatten');
  const s = sanitizeHtml(f, m.sanitizeOptions(opts)); lap('sanitize');
  const c = m.cutHistory(s); lap('cut');
  const md = m.converter(opts).turndown(c); lap('turndown');
  const out = m.cleanText(md, opts); lap('text');
  console.log(name, times.join(' '));
}
