import { escapeHtml } from '#shared/mail/entities';
import { randomBytes } from 'node:crypto';
import type { BookingRecord, ConfigurationRecord } from '#shared/db/scheduling';

/**
 * The public booking page (`GET /scheduling/{slug}`) and the page a booking reference opens
 * (`GET /scheduling/{slug}/booking/{reference}`): server-rendered HTML with one small inline script
 * (no framework, no fonts or scripts fetched from anywhere) that reads free slots from the public
 * API, shows them in the guest's time zone (detected, changeable), books, reschedules and cancels.
 * Everything works by keyboard; status changes are announced through a live region. The script and
 * style carry a per-response nonce, the only ones the page's CSP lets run.
 */

/** JSON inside a <script type="application/json">: no `<` can close the element. */
const json = (value: unknown) => JSON.stringify(value).replace(/</g, '\\u003c');

const STYLE = `
:root{color-scheme:light dark;--accent:#1f5fbf;--line:#8886;--bg:Canvas;--fg:CanvasText}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
main{max-width:56rem;margin:0 auto;padding:1.25rem}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.15rem;margin:1.2rem 0 .5rem}
.meta{margin:.25rem 0 1rem;opacity:.85}
.grid{display:grid;gap:1rem}@media(min-width:48rem){.grid{grid-template-columns:16rem 1fr}}
.days,.slots{display:flex;flex-wrap:wrap;gap:.5rem;list-style:none;margin:0;padding:0}
.days button{padding:.45rem .7rem}@media(min-width:48rem){.days{flex-direction:column}}
button,input,select,textarea{font:inherit}
button{cursor:pointer;border:1px solid var(--line);border-radius:.5rem;padding:.55rem .8rem;background:transparent;color:inherit;min-height:44px}
button[aria-pressed=true],button.primary{background:var(--accent);border-color:var(--accent);color:#fff}
button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
label{display:block;font-weight:600;margin:.75rem 0 .25rem}
input,select,textarea{width:100%;max-width:28rem;padding:.5rem;border:1px solid var(--line);border-radius:.4rem;background:transparent;color:inherit}
.panel{border:1px solid var(--line);border-radius:.75rem;padding:1rem}
.status{min-height:1.5rem;margin:.75rem 0;font-weight:600}
.error{color:#c62828}
[hidden]{display:none!important}
`;

/** The script of both pages. `mode` is `book` or `manage`; the bootstrap data is read from #boot. */
const SCRIPT = `
(function () {
  var boot = JSON.parse(document.getElementById('boot').textContent);
  var $ = function (id) { return document.getElementById(id); };
  var zoneSelect = $('zone');
  var zone = boot.zone || Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
  var zones = (Intl.supportedValuesOf ? Intl.supportedValuesOf('timeZone') : [zone]);
  if (zones.indexOf(zone) < 0) zones.unshift(zone);
  zones.forEach(function (z) { var o = document.createElement('option'); o.value = z; o.textContent = z.replace(/_/g, ' '); if (z === zone) o.selected = true; zoneSelect.appendChild(o); });
  var chosen = null, slots = [];
  function say(text, isError) { var s = $('status'); s.textContent = text; s.className = 'status' + (isError ? ' error' : ''); }
  function fmt(t, opts) { return new Intl.DateTimeFormat(undefined, Object.assign({ timeZone: zone }, opts)).format(new Date(t * 1000)); }
  function dayKey(t) { return new Intl.DateTimeFormat('en-CA', { timeZone: zone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(new Date(t * 1000)); }
  function headers(extra) { var h = Object.assign({ 'content-type': 'application/json' }, extra || {}); if (boot.session) h.authorization = 'Bearer ' + boot.session; return h; }
  function api(method, path, body) {
    return fetch(path, { method: method, headers: headers(), body: body ? JSON.stringify(body) : undefined }).then(function (r) {
      return r.json().then(function (j) { if (!r.ok) throw new Error((j.error && j.error.message) || ('HTTP ' + r.status)); return j.data; });
    });
  }
  function ref() { return boot.reference ? 'booking_reference=' + encodeURIComponent(boot.reference) : 'configuration_id=' + boot.configuration_id; }
  function renderDays() {
    var byDay = {}, order = [];
    slots.forEach(function (s) { var k = dayKey(s.start_time); if (!byDay[k]) { byDay[k] = []; order.push(k); } byDay[k].push(s); });
    var days = $('days'); days.textContent = '';
    if (!order.length) { say('No free times in the coming days.', false); return; }
    order.forEach(function (k, i) {
      var li = document.createElement('li'), b = document.createElement('button');
      b.type = 'button'; b.textContent = fmt(byDay[k][0].start_time, { weekday: 'short', month: 'short', day: 'numeric' });
      b.setAttribute('aria-label', fmt(byDay[k][0].start_time, { weekday: 'long', month: 'long', day: 'numeric' }) + ', ' + byDay[k].length + (byDay[k].length === 1 ? ' time' : ' times'));
      b.setAttribute('aria-pressed', 'false'); b.dataset.day = k;
      b.addEventListener('click', function () { Array.prototype.forEach.call(days.querySelectorAll('button'), function (x) { x.setAttribute('aria-pressed', String(x === b)); }); renderSlots(byDay[k]); var first = $('slots').querySelector('button'); if (first) first.focus(); });
      li.appendChild(b); days.appendChild(li);
      if (i === 0) { b.setAttribute('aria-pressed', 'true'); renderSlots(byDay[k]); }
    });
  }
  function renderSlots(list) {
    var ul = $('slots'); ul.textContent = '';
    $('slots-heading').textContent = 'Times on ' + fmt(list[0].start_time, { weekday: 'long', month: 'long', day: 'numeric' }) + ' (' + zone.replace(/_/g, ' ') + ')';
    list.forEach(function (s) {
      var li = document.createElement('li'), b = document.createElement('button');
      var seats = typeof s.seats_left === 'number' ? s.seats_left + (s.seats_left === 1 ? ' seat left' : ' seats left') : '';
      b.type = 'button'; b.className = 'slot'; b.textContent = fmt(s.start_time, { hour: 'numeric', minute: '2-digit' }) + (seats ? ' · ' + seats : '');
      if (seats) b.dataset.seats = String(s.seats_left);
      b.setAttribute('aria-label', fmt(s.start_time, { weekday: 'long', month: 'long', day: 'numeric', hour: 'numeric', minute: '2-digit' }) + ' to ' + fmt(s.end_time, { hour: 'numeric', minute: '2-digit' }) + (seats ? ', ' + seats : ''));
      b.setAttribute('aria-pressed', 'false');
      b.addEventListener('click', function () { choose(s, b); });
      li.appendChild(b); ul.appendChild(li);
    });
  }
  function choose(s, button) {
    chosen = s;
    Array.prototype.forEach.call(document.querySelectorAll('button.slot'), function (x) { x.setAttribute('aria-pressed', String(x === button)); });
    $('chosen').textContent = fmt(s.start_time, { weekday: 'long', month: 'long', day: 'numeric', hour: 'numeric', minute: '2-digit' }) + ' – ' + fmt(s.end_time, { hour: 'numeric', minute: '2-digit', timeZoneName: 'short' });
    $('form-panel').hidden = false;
    var first = $('form-panel').querySelector('input,button.primary'); if (first) first.focus();
  }
  function load() {
    var now = Math.floor(Date.now() / 1000), end = now + boot.days_ahead * 86400;
    say('Loading free times…');
    return api('GET', '/v3/scheduling/availability?' + ref() + (boot.booking ? '&booking_id=' + boot.booking.booking_id : '') + '&start_time=' + now + '&end_time=' + end).then(function (d) { slots = d.time_slots || []; say(''); renderDays(); }, function (e) { say(e.message, true); });
  }
  zoneSelect.addEventListener('change', function () { zone = zoneSelect.value; renderDays(); if (boot.booking) showBooking(boot.booking); });
  function showBooking(b) {
    $('booking-when').textContent = fmt(b.start_time, { weekday: 'long', month: 'long', day: 'numeric', year: 'numeric', hour: 'numeric', minute: '2-digit' }) + ' – ' + fmt(b.end_time, { hour: 'numeric', minute: '2-digit', timeZoneName: 'short' });
    $('booking-status').textContent = b.status;
  }
  if (boot.mode === 'book') {
    $('form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      if (!chosen) { say('Choose a time first.', true); return; }
      var fields = {}; Array.prototype.forEach.call(document.querySelectorAll('[data-field]'), function (i) { if (i.value) fields[i.dataset.field] = i.value; });
      var body = { start_time: chosen.start_time, end_time: chosen.end_time, event_id: chosen.event_id, guest: { name: $('name').value, email: $('email').value }, timezone: zone, email_language: boot.language, additional_fields: fields };
      say('Booking…');
      api('POST', '/v3/scheduling/bookings?' + ref(), body).then(function (b) {
        if (boot.redirect) { location.href = boot.redirect; return; }
        $('picker').hidden = true; $('form-panel').hidden = true; $('done').hidden = false;
        boot.booking = b; showBooking(b);
        var manage = location.pathname.replace(/\\/$/, '') + '/booking/' + encodeURIComponent(b.booking_reference);
        $('reschedule-link').href = manage + '#reschedule'; $('cancel-link').href = manage + '#cancel';
        say('Booked. A confirmation is on its way to ' + b.guest.email + '.');
        $('done-heading').focus();
      }, function (e) { say(e.message, true); load(); });
    });
    load();
  } else {
    showBooking(boot.booking);
    ['confirm', 'decline'].forEach(function (id) {
      if (!$(id)) return;
      $(id).addEventListener('click', function () {
        say(id === 'confirm' ? 'Confirming…' : 'Declining…');
        api('PUT', '/v3/scheduling/bookings/' + boot.booking.booking_id + '?' + ref(), { salt: boot.salt, status: id === 'confirm' ? 'confirmed' : 'cancelled', cancellation_reason: ($('reason') && $('reason').value) || undefined })
          .then(function (b) { boot.booking = b; showBooking(b); say(id === 'confirm' ? 'The booking is confirmed; the guest is told.' : 'The booking is declined; the guest is told.'); $('actions').hidden = true; }, function (e) { say(e.message, true); });
      });
    });
    if ($('cancel')) $('cancel').addEventListener('click', function () {
      say('Cancelling…');
      api('DELETE', '/v3/scheduling/bookings/' + boot.booking.booking_id + '?' + ref(), { cancellation_reason: $('reason').value || undefined }).then(function (b) { boot.booking = b; showBooking(b); say('The booking is cancelled.'); $('actions').hidden = true; $('picker').hidden = true; }, function (e) { say(e.message, true); });
    });
    if ($('reschedule')) $('reschedule').addEventListener('click', function () { $('picker').hidden = false; load().then(function () { var d = $('days').querySelector('button'); if (d) d.focus(); }); });
    $('form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      if (!chosen) { say('Choose a new time first.', true); return; }
      say('Moving the booking…');
      api('PATCH', '/v3/scheduling/bookings/' + boot.booking.booking_id + '?' + ref(), { start_time: chosen.start_time, end_time: chosen.end_time, event_id: chosen.event_id }).then(function (b) { boot.booking = b; showBooking(b); $('picker').hidden = true; $('form-panel').hidden = true; say('The booking is moved.'); }, function (e) { say(e.message, true); });
    });
    if (location.hash === '#reschedule' && $('reschedule')) $('reschedule').click();
    if (location.hash === '#cancel' && $('reason')) $('reason').focus();
  }
})();
`;

interface PageInput {
  config: ConfigurationRecord;
  organizerName: string;
  /** What the page script needs (JSON in the page). */
  boot: Record<string, unknown>;
  body: string;
  title: string;
}

function shell({ config, organizerName, boot, body, title }: PageInput): { html: string; nonce: string } {
  const nonce = randomBytes(16).toString('base64');
  const eb = config.event_booking;
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><meta name="robots" content="noindex"><style nonce="${nonce}">${STYLE}</style></head>
<body><main>
<p class="meta">${escapeHtml(organizerName)}</p>
<h1>${escapeHtml(eb.title)}</h1>
<p class="meta">${config.type === 'group' ? 'Group event' : `${config.availability.duration_minutes} minutes`}${eb.location ? ` · ${escapeHtml(eb.location)}` : ''}</p>
${eb.description ? `<p>${escapeHtml(eb.description)}</p>` : ''}
<label for="zone">Time zone</label><select id="zone"></select>
<div id="status" class="status" role="status" aria-live="polite"></div>
${body}
${config.scheduler.cancellation_policy ? `<h2>Cancellation policy</h2><p>${escapeHtml(config.scheduler.cancellation_policy)}</p>` : ''}
</main>
<script type="application/json" id="boot">${json(boot)}</script>
<script nonce="${nonce}">${SCRIPT}</script>
</body></html>`;
  return { html, nonce };
}

const PICKER = (hidden: boolean, submit: string) => `
<section id="picker" aria-labelledby="pick-heading"${hidden ? ' hidden' : ''}>
<h2 id="pick-heading">Pick a time</h2>
<div class="grid">
<nav aria-label="Days"><ul id="days" class="days"></ul></nav>
<section aria-labelledby="slots-heading"><h2 id="slots-heading">Times</h2><ul id="slots" class="slots"></ul></section>
</div>
</section>
<section id="form-panel" class="panel" hidden aria-labelledby="form-heading">
<h2 id="form-heading">Your time: <span id="chosen"></span></h2>
<form id="form">
${submit}
</form>
</section>`;

function additionalFields(config: ConfigurationRecord): string {
  const fields = Object.entries(config.scheduler.additional_fields ?? {}).sort(
    ([, a], [, b]) => (a.order ?? 0) - (b.order ?? 0),
  );
  return fields
    .map(([key, f]) => {
      const id = `field-${escapeHtml(key)}`;
      const required = f.required ? ' required' : '';
      const input =
        f.type === 'multi_line_text'
          ? `<textarea id="${id}" data-field="${escapeHtml(key)}"${required}></textarea>`
          : f.type === 'dropdown'
            ? `<select id="${id}" data-field="${escapeHtml(key)}"${required}><option value=""></option>${(f.options ?? []).map((o) => `<option>${escapeHtml(o)}</option>`).join('')}</select>`
            : `<input id="${id}" data-field="${escapeHtml(key)}" type="${f.type === 'email' ? 'email' : f.type === 'phone_number' ? 'tel' : f.type === 'date' ? 'date' : 'text'}"${required}>`;
      return `<label for="${id}">${escapeHtml(f.label)}${f.required ? '' : ' (optional)'}</label>${input}`;
    })
    .join('\n');
}

/** The booking page of a configuration. */
export function bookingPage(
  config: ConfigurationRecord,
  organizerName: string,
  options: { session?: string | undefined; clientId?: string | undefined; zone?: string | undefined },
) {
  const days = Math.min(config.scheduler.available_days_in_future ?? 30, 60);
  const form = `
<label for="name">Your name</label><input id="name" name="name" autocomplete="name" required>
<label for="email">Your email</label><input id="email" name="email" type="email" autocomplete="email" required>
${additionalFields(config)}
<p><button type="submit" class="primary">Book</button></p>`;
  const done = `
<section id="done" class="panel" hidden aria-labelledby="done-heading">
<h2 id="done-heading" tabindex="-1">You are booked</h2>
<p><span id="booking-when"></span> · <span id="booking-status"></span></p>
<p><a id="reschedule-link" href="#">Reschedule</a> · <a id="cancel-link" href="#">Cancel</a></p>
<p>Keep these links: they are the only way to change this booking.</p>
</section>`;
  return shell({
    config,
    organizerName,
    title: `Book: ${config.event_booking.title}`,
    body: PICKER(false, form) + done,
    boot: {
      mode: 'book',
      configuration_id: config.id,
      ...(options.session ? { session: options.session } : {}),
      ...(options.clientId ? { client_id: options.clientId } : {}),
      ...(options.zone ? { zone: options.zone } : {}),
      days_ahead: days,
      language: 'en',
      ...(config.scheduler.confirmation_redirect_url ? { redirect: config.scheduler.confirmation_redirect_url } : {}),
    },
  });
}

/**
 * The page a booking reference opens: for the guest, the booking with (unless hidden) reschedule and
 * cancel; for the organizer's confirmation link, confirm or decline while it is pending.
 */
export function managePage(
  config: ConfigurationRecord,
  organizerName: string,
  booking: BookingRecord,
  view: object,
  reference: string,
  role: 'guest' | 'organizer',
  salt: string,
) {
  const open = booking.status !== 'cancelled';
  let actions = '<section id="actions" hidden></section>';
  if (role === 'organizer' && booking.status === 'pending') {
    actions = `<section id="actions" class="panel" aria-label="Confirm or decline">
<label for="reason">Message to the guest if you decline (optional)</label><textarea id="reason" rows="2"></textarea>
<p><button type="button" id="confirm" class="primary">Confirm the booking</button> <button type="button" id="decline">Decline</button></p>
</section>`;
  } else if (role === 'guest' && open) {
    actions = `<section id="actions" class="panel" aria-label="Change this booking">
${config.scheduler.hide_rescheduling_options ? '' : '<p><button type="button" id="reschedule">Choose another time</button></p>'}
${config.scheduler.hide_cancellation_options ? '' : '<label for="reason">Reason for cancelling (optional)</label><textarea id="reason" rows="2"></textarea><p><button type="button" id="cancel">Cancel this booking</button></p>'}
</section>`;
  }
  const body = `
<section class="panel" aria-labelledby="booking-heading">
<h2 id="booking-heading">${role === 'organizer' ? 'Booking request' : 'Your booking'}</h2>
<p><span id="booking-when"></span> · <span id="booking-status"></span></p>
<p>${escapeHtml(booking.guest.name)} &lt;${escapeHtml(booking.guest.email)}&gt;</p>
</section>
${actions}
${PICKER(true, '<p><button type="submit" class="primary">Move the booking here</button></p>')}`;
  return shell({
    config,
    organizerName,
    title: `${role === 'organizer' ? 'Booking request' : 'Your booking'}: ${config.event_booking.title}`,
    body,
    boot: {
      mode: 'manage',
      configuration_id: config.id,
      reference,
      ...(role === 'organizer' ? { salt } : {}),
      booking: view,
      days_ahead: Math.min(config.scheduler.available_days_in_future ?? 30, 60),
      language: booking.email_language,
    },
  });
}

/** A page saying what went wrong (unknown page, expired session, unknown reference). */
export function errorPage(message: string) {
  const nonce = randomBytes(16).toString('base64');
  const html = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>Booking page unavailable</title><meta name="robots" content="noindex"><style nonce="${nonce}">${STYLE}</style></head>
<body><main><h1>This page is not available</h1><p role="alert">${escapeHtml(message)}</p></main></body></html>`;
  return { html, nonce };
}
