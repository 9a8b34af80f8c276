import { cleanMessageBody } from '#shared/mail/clean';
const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const shapes: Record<string, [string, object?, boolean?]> = {
  paragraphs: [fill('<p>Hello <b>world</b> and <a href="https://x.com/y">link</a> text &amp; more.</p>\n')],
  paragraphsKeep: [fill('<p>Hello <b>world</b> <img src="https://x/a.png" alt="a"> <a href="https://x.com/y">link</a>.</p>\n'), {ignore_links:false, ignore_images:false, images_as_markdown:true}],
  tables: [fill('<table><tr><td>a</td><td>b <b>c</b></td></tr></table>'), {ignore_tables:false}],
  nestedTables: [fill('<table><tr><td>'), {ignore_tables:false}],
  deepDivs: [fill('<div>x')],
  deepB: [fill('<b><i>x')],
  anchors: [fill('<a href=x>y')],
  hrs: [fill('<hr>')],
  hrsDiv: [fill('<hr><div> <b> ')],
  li: [fill('<li>x')],
  ul: [fill('<ul><li>x')],
  blockquotes: [fill('<p>a</p><blockquote>q</blockquote>')],
  unclosedQuote: ['<p>hi</p><blockquote>' + fill('<p>q</p>')],
  plain: [fill('Line of text > with stuff\n> quoted\n\n'), {}, true],
  plainLong: [fill('word '), {}, true],
  plainSpaces: [fill(' ') + 'x', {}, true],
  htmlSpaces: ['<p>' + fill(' ') + 'x</p>'],
  attribLong: ['<div style="' + fill('a;') + '">x</div>'],
  widthDigits: ['<img src="https://x" style="width:' + fill('1') + 'x">', {ignore_images:false}],
  pre: ['<pre>' + fill('line  \n') + '</pre>'],
  textNoNewline: ['<p>' + fill('On a day someone wrote ') + '</p>'],
  entitiesPlain: [fill('&amp;&#65;&bogus;'), {}, true],
  onLines: [fill('On x\n'), {}, true],
  fromLines: [fill('From: x\n'), {}, true],
};
for (const [name, [body, opts, plain]] of Object.entries(shapes)) {
  const times: number[] = []; let len = 0;
  for (let i = 0; i < 3; i++) { const t = performance.now(); len = cleanMessageBody(body, opts as never, plain).length; times.push(performance.now() - t); }
  times.sort((a, b) => a - b);
  console.log(name.padEnd(16), times.map((x) => x.toFixed(0).padStart(5)).join(' '), 'ms', len);
}
