import { cleanMessageBody } from '#shared/mail/clean';
for (const h of ['<p>a</p><blockquote>q</blockquote><p>b</p>', '<div>a<blockquote>q</blockquote>b</div>', '<p>a<blockquote>q</blockquote>b</p>', '<div>x<span hidden>h</span>y <o:p style="display:none">zz</o:p>w</div>', '<p>a</p><div id="divRplyFwdMsg">From</div><p>old</p>', '<p>data-sb="cut" text</p><p>more</p>', '<p data-sb="drop">spoof</p><p>ok</p>'])
  console.log(JSON.stringify(cleanMessageBody(h)));
