import { cleanMessageBody } from '#shared/mail/clean';
const MB = 1 << 20;
const fill = (unit: string) => unit.repeat(Math.ceil(MB / unit.length));
const newsletterUnit = `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="max-width:600px;margin:0 auto;background-color:#ffffff;font-family:Helvetica,Arial,sans-serif"><tr><td style="padding:24px 32px 8px 32px;font-size:16px;line-height:24px;color:#333333;mso-line-height-rule:exactly"><p style="margin:0 0 16px 0;font-size:16px;line-height:24px">Big news this week: our product now supports exporting reports straight to your inbox.</p><a href="https://example.com/track?u=123&amp;id=456" style="display:inline-block;padding:12px 24px;background:#1a73e8;color:#fff;border-radius:4px;text-decoration:none">Read more</a><img src="https://example.com/open.gif?id=1" width="1" height="1" alt="" style="display:block;border:0"></td></tr></table>\n`;
const shapes: Record<string, [string, object?]> = {
  oneBigP: ['<p>' + 'x'.repeat(MB) + '</p>'],
  words: ['<p>' + fill('hello world ') + '</p>'],
  divs: [fill('<div>Hello there, this is a line of the message.</div>\n')],
  newsletter: [fill(newsletterUnit)],
  newsletterTables: [fill(newsletterUnit), { ignore_tables: false }],
  styleHeavy: ['<html><head><style>' + fill('.a{color:red}') + '</style></head><body><p>Hi</p></body></html>'],
  brLines: ['<div>' + fill('Some line of text<br>\n') + '</div>'],
};
for (let round = 0; round < 2; round++) for (const [name, [body, opts]] of Object.entries(shapes)) {
  const t = performance.now();
  const out = cleanMessageBody(body, opts as never);
  console.log(name.padEnd(18), (performance.now() - t).toFixed(0).padStart(6), 'ms', out.length);
}
