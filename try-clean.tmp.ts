import { cleanMessageBody } from '#shared/mail/clean';
const cases: [string, string, object?, boolean?][] = [
 ['gmail', `<div dir="ltr">Hi Bob,<div><br></div><div>See <a href="https://x.com/a_b">the doc</a>.</div><div><br></div><div>Best regards,</div><div>Ann</div><br><div class="gmail_quote gmail_quote_container"><div dir="ltr" class="gmail_attr">On Tue, 3 Mar 2026 at 10:00, Bob &lt;bob@x.com&gt; wrote:<br></div><blockquote class="gmail_quote">Old stuff</blockquote></div></div>`],
 ['gmail links', `<div dir="ltr">Hi Bob,<div>See <a href="https://x.com/a_b">the doc</a>.</div><span class="gmail_signature_prefix">-- </span><br><div dir="ltr" class="gmail_signature">Ann Smith<br>CEO</div></div>`, {ignore_links:false}],
 ['outlook', `<html><head><style>p{color:red}</style><title>T</title></head><body><div>Sounds good&nbsp;&amp; fine.</div><div id="appendonsend"></div><hr style="display:inline-block;width:98%"><div id="divRplyFwdMsg"><b>From:</b> Bob</div><div>old body</div></body></html>`],
 ['outlook hr', `<div>Reply here</div><hr><p><b>From:</b> Bob<br><b>Sent:</b> x</p><p>old</p>`],
 ['outlook desktop', `<p class=MsoNormal>Reply<o:p></o:p></p><div><div style="border:none;border-top:solid #E1E1E1 1.0pt;padding:3.0pt 0in 0in 0in"><p class=MsoNormal><b>From:</b> Bob<br><b>Sent:</b> Tuesday</p></div></div><p>old</p>`],
 ['apple', `<div>Sure thing</div><div><br><blockquote type="cite"><div>On 3 Mar 2026, at 10:00, Ann &lt;ann@x.com&gt; wrote:</div><br></blockquote></div>`],
 ['apple2', `<div>Sure thing</div><div><br><div>On 3 Mar 2026, at 10:00, Ann &lt;ann@x.com&gt; wrote:</div><blockquote type="cite">old</blockquote></div><div>bottom reply</div>`],
 ['tbird', `<p>Yes.</p><div class="moz-cite-prefix">On 3/3/26 10:00, Ann wrote:<br></div><blockquote type="cite">old</blockquote><pre class="moz-signature" cols="72">-- \nAnn</pre>`],
 ['script', `<p>Hello<script>alert("evil")</script></p><style>.x{}</style><noscript>ns</noscript><iframe src="x">if</iframe><object>obj</object><!-- comment --><p style="display: none">hidden</p><span hidden>h2</span><p>World <img src="https://t.co/p.gif" width="1" height="1"></p>`],
 ['images', `<p>A <img src="https://x.com/a.png" alt="Logo"> B <img src="https://t/p.gif" width=0 height=0 alt="px"> <img src="https://t/q.gif" style="width:1px;height:1px" alt="px2"></p>`, {ignore_images:false}],
 ['images md', `<p>A <img src="https://x.com/a b.png" alt="Logo"> B</p>`, {ignore_images:false, images_as_markdown:true}],
 ['tables', `<p>Top</p><table><tr><th>Name</th><th>Qty</th></tr><tr><td>Apple</td><td>3</td></tr><tr><td></td><td>x</td></tr></table><p>End</p>`, {ignore_tables:false}],
 ['tables drop', `<p>Top</p><table><tr><th>Name</th><th>Qty</th></tr></table><p>End</p>`],
 ['plain output', `<h1>Title</h1><p>Some <b>bold</b> and <em>em</em> <code>x*y</code> <a href="https://x.com">link</a> <a href="mailto:a@x.com">a@x.com</a></p><ul><li>one</li><li>two<ul><li>inner</li></ul></li></ul><ol><li>first</li><li>second</li></ol><pre><code>code\n  block</code></pre>`, {html_as_markdown:false, ignore_links:false}],
 ['markdown', `<h1>Title</h1><p>Some <b>bold</b> and <em>em</em> <code>x*y</code> 1_2</p><ul><li>one</li><li>two<ul><li>inner</li></ul></li></ul><ol start="3"><li>first</li><li>second</li></ol><pre><code>code\n  block</code></pre><pre>raw\npre</pre>`],
 ['plain', `Hi Bob,\r\n\r\nSounds good &amp; fine.\u00a0   \n\n\n\nThanks,\nAnn\n\nOn Tue, 3 Mar 2026 at 10:00, Bob Smith <\nbob@x.com> wrote:\n> old\n> stuff\n`, {}, true],
 ['plain inline', `On Tue, 3 Mar 2026 at 10:00, Bob <bob@x.com> wrote:\n> question?\n\nanswer.\n\n-- \nAnn`, {}, true],
 ['plain outlook', `Reply.\n\n________________________________\nFrom: Bob\nSent: Tuesday\nTo: Ann\nSubject: x\n\nold`, {}, true],
 ['plain orig', `Reply.\n\n-----Original Message-----\nFrom: Bob\nold`, {}, true],
 ['thanks only', `Thanks!`, {}, true],
 ['sent from', `Ok\n\nSent from my iPhone\n\nOn x, Bob wrote:\nold`, {}, true],
 ['conclusion off', `Ok\n\nBest regards,\nAnn\n-- \nsig`, {remove_conclusion_phrases:false}, true],
 ['malformed', `<div><p>Unclosed <b>bold <i>it</div></span><table><td>x<tr>y</p>&amp &#x41; &bogus; <a href="javascript:alert(1)">js</a> <<>> </`],
 ['entities', `<p>Caf&eacute; &lt;tag&gt; &quot;q&quot; &#8364; &nbsp;&nbsp;x&nbsp;</p><p>&nbsp;</p><p>&nbsp;</p><p>next</p>`],
 ['nohtml', `Hi\n\n> q\n\nok`],
 ['gt in html', `<div>reply</div><div>&gt; quoted</div><div>-- </div><div>Ann</div>`],
];
for (const [name, body, opts, plain] of cases) {
  console.log(`=== ${name}\n${JSON.stringify(cleanMessageBody(body, opts as never, plain))}`);
}
