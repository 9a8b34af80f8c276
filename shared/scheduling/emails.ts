import { escapeHtml } from '#shared/mail/entities';
import type { EMAIL_LANGUAGES } from '#schemas/scheduling';
import type { OutboxEntry } from '#shared/db/outbox';
import type { BookingRecord, ConfigurationRecord } from '#shared/db/scheduling';
import { newId } from '#shared/ids';
import type { Job } from '#shared/jobs/job';

/**
 * The scheduler's emails, from the organizer's address through the send path (each counted against
 * an Agent Account's daily quota), committed as `send-mail` jobs with the booking change they tell
 * of: the guest's confirmation (with the iCalendar REQUEST), the notice that a request awaits the
 * organizer, the organizer's confirmation request, a new time (REQUEST again) and a cancellation
 * (CANCEL). Guests read them in their `email_language`; the organizer's request is in English.
 */
type Language = (typeof EMAIL_LANGUAGES)[number];
export type BookingMail = 'confirmed' | 'pending' | 'rescheduled' | 'cancelled';

const TEXT: Record<
  Language,
  Record<BookingMail | 'reminder', [subject: string, line: string]> & {
    hello: string;
    when: string;
    where: string;
    with: string;
    reason: string;
    reschedule: string;
    cancel: string;
  }
> = {
  en: {
    reminder: ['Reminder', 'A reminder of your booking.'],
    confirmed: ['Booking confirmed', 'Your booking is confirmed.'],
    pending: ['Booking requested', 'Your request was sent. You will hear back once it is confirmed.'],
    rescheduled: ['Booking rescheduled', 'Your booking has a new time.'],
    cancelled: ['Booking cancelled', 'Your booking is cancelled.'],
    hello: 'Hello {name},',
    when: 'When',
    where: 'Where',
    with: 'With',
    reason: 'Reason',
    reschedule: 'Reschedule',
    cancel: 'Cancel',
  },
  fr: {
    reminder: ['Rappel', 'Un rappel de votre réservation.'],
    confirmed: ['Réservation confirmée', 'Votre réservation est confirmée.'],
    pending: ['Réservation demandée', 'Votre demande a été envoyée. Vous recevrez une réponse dès sa confirmation.'],
    rescheduled: ['Réservation déplacée', 'Votre réservation a un nouvel horaire.'],
    cancelled: ['Réservation annulée', 'Votre réservation est annulée.'],
    hello: 'Bonjour {name},',
    when: 'Quand',
    where: 'Où',
    with: 'Avec',
    reason: 'Motif',
    reschedule: 'Déplacer',
    cancel: 'Annuler',
  },
  de: {
    reminder: ['Erinnerung', 'Eine Erinnerung an Ihre Buchung.'],
    confirmed: ['Buchung bestätigt', 'Ihre Buchung ist bestätigt.'],
    pending: ['Buchung angefragt', 'Ihre Anfrage wurde gesendet. Sie erhalten Nachricht, sobald sie bestätigt ist.'],
    rescheduled: ['Buchung verschoben', 'Ihre Buchung hat einen neuen Termin.'],
    cancelled: ['Buchung storniert', 'Ihre Buchung ist storniert.'],
    hello: 'Hallo {name},',
    when: 'Wann',
    where: 'Wo',
    with: 'Mit',
    reason: 'Grund',
    reschedule: 'Verschieben',
    cancel: 'Stornieren',
  },
  es: {
    reminder: ['Recordatorio', 'Un recordatorio de tu reserva.'],
    confirmed: ['Reserva confirmada', 'Tu reserva está confirmada.'],
    pending: ['Reserva solicitada', 'Tu solicitud se ha enviado. Recibirás noticias cuando se confirme.'],
    rescheduled: ['Reserva reprogramada', 'Tu reserva tiene una nueva hora.'],
    cancelled: ['Reserva cancelada', 'Tu reserva está cancelada.'],
    hello: 'Hola, {name}:',
    when: 'Cuándo',
    where: 'Dónde',
    with: 'Con',
    reason: 'Motivo',
    reschedule: 'Reprogramar',
    cancel: 'Cancelar',
  },
  nl: {
    reminder: ['Herinnering', 'Een herinnering aan je boeking.'],
    confirmed: ['Boeking bevestigd', 'Je boeking is bevestigd.'],
    pending: ['Boeking aangevraagd', 'Je aanvraag is verstuurd. Je hoort het zodra hij bevestigd is.'],
    rescheduled: ['Boeking verplaatst', 'Je boeking heeft een nieuw tijdstip.'],
    cancelled: ['Boeking geannuleerd', 'Je boeking is geannuleerd.'],
    hello: 'Hallo {name},',
    when: 'Wanneer',
    where: 'Waar',
    with: 'Met',
    reason: 'Reden',
    reschedule: 'Verplaatsen',
    cancel: 'Annuleren',
  },
  sv: {
    reminder: ['Påminnelse', 'En påminnelse om din bokning.'],
    confirmed: ['Bokning bekräftad', 'Din bokning är bekräftad.'],
    pending: ['Bokning begärd', 'Din förfrågan har skickats. Du får besked när den är bekräftad.'],
    rescheduled: ['Bokning flyttad', 'Din bokning har en ny tid.'],
    cancelled: ['Bokning avbokad', 'Din bokning är avbokad.'],
    hello: 'Hej {name},',
    when: 'När',
    where: 'Var',
    with: 'Med',
    reason: 'Orsak',
    reschedule: 'Boka om',
    cancel: 'Avboka',
  },
  ja: {
    reminder: ['リマインダー', 'ご予約のリマインダーです。'],
    confirmed: ['予約が確定しました', 'ご予約が確定しました。'],
    pending: ['予約をリクエストしました', 'リクエストを送信しました。確定しましたらお知らせします。'],
    rescheduled: ['予約の日時が変更されました', 'ご予約の日時が変更されました。'],
    cancelled: ['予約がキャンセルされました', 'ご予約はキャンセルされました。'],
    hello: '{name} 様',
    when: '日時',
    where: '場所',
    with: '相手',
    reason: '理由',
    reschedule: '日時を変更',
    cancel: 'キャンセル',
  },
  zh: {
    reminder: ['提醒', '这是您的预约提醒。'],
    confirmed: ['预约已确认', '您的预约已确认。'],
    pending: ['预约已提交', '您的请求已发送，确认后将通知您。'],
    rescheduled: ['预约已改期', '您的预约时间已更改。'],
    cancelled: ['预约已取消', '您的预约已取消。'],
    hello: '{name}，您好：',
    when: '时间',
    where: '地点',
    with: '参与者',
    reason: '原因',
    reschedule: '改期',
    cancel: '取消',
  },
};

/** The booking's time in the guest's zone and language, e.g. "Friday, 27 November 2026, 09:30 – 10:00 (Europe/Berlin)". */
export function whenLine(b: Pick<BookingRecord, 'start' | 'end' | 'timezone'>, language: string): string {
  const day = new Intl.DateTimeFormat(language, { timeZone: b.timezone, dateStyle: 'full' }).format(b.start * 1000);
  const time = new Intl.DateTimeFormat(language, { timeZone: b.timezone, timeStyle: 'short' });
  return `${day}, ${time.format(b.start * 1000)} – ${time.format(b.end * 1000)} (${b.timezone})`;
}

const job = (
  b: BookingRecord,
  purpose: string,
  mail: Omit<Extract<Job, { kind: 'send-mail' }>, 'kind' | 'application_id' | 'grant_id' | 'purpose'>,
): OutboxEntry => ({
  job: { kind: 'send-mail', application_id: b.application_id, grant_id: b.grant_id, purpose, ...mail },
  id: newId('job'),
  applicationId: b.application_id,
});

const table = (rows: [string, string][]) =>
  `<table>${rows.map(([k, v]) => `<tr><th align="left">${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join('')}</table>`;

/**
 * The guest's email about a booking change. `links`: the page to reschedule or cancel (none when the
 * configuration hides them or has no booking page); `ics`: the calendar part (REQUEST, or CANCEL).
 */
export function guestMail(
  config: ConfigurationRecord,
  b: BookingRecord,
  kind: BookingMail,
  options: { ics?: string | undefined; links?: { manage: string } | undefined },
): OutboxEntry[] {
  if (config.event_booking.disable_emails === true) return [];
  const calendar = options.ics
    ? { method: kind === 'cancelled' ? ('CANCEL' as const) : ('REQUEST' as const), ics: options.ics }
    : undefined;
  return [
    job(b, `booking ${kind}`, { ...guestMessage(config, b, kind, options.links), ...(calendar ? { calendar } : {}) }),
  ];
}

/** The guest's message (to the guest and the additional guests) in the booking's language. */
function guestMessage(
  config: ConfigurationRecord,
  b: BookingRecord,
  kind: BookingMail | 'reminder',
  links: { manage: string } | undefined,
) {
  const language = (b.email_language in TEXT ? b.email_language : 'en') as Language;
  const t = TEXT[language];
  const [subject, line] = t[kind];
  const rows: [string, string][] = [
    [t.when, whenLine(b, language)],
    ...(b.location ? ([[t.where, b.location]] as [string, string][]) : []),
    [t.with, b.organizer.name ? `${b.organizer.name} <${b.organizer.email}>` : b.organizer.email],
    ...(kind === 'cancelled' && b.cancellation_reason
      ? ([[t.reason, b.cancellation_reason]] as [string, string][])
      : []),
  ];
  const linkLine =
    links && kind !== 'cancelled'
      ? `<p>${config.scheduler.hide_rescheduling_options ? '' : `<a href="${escapeHtml(links.manage)}#reschedule">${escapeHtml(t.reschedule)}</a> `}${config.scheduler.hide_cancellation_options ? '' : `<a href="${escapeHtml(links.manage)}#cancel">${escapeHtml(t.cancel)}</a>`}</p>`
      : '';
  const body = `<p>${escapeHtml(t.hello.replace('{name}', b.guest.name))}</p><p>${escapeHtml(line)}</p><p><strong>${escapeHtml(b.title)}</strong></p>${table(rows)}${linkLine}${
    config.scheduler.cancellation_policy && kind !== 'cancelled'
      ? `<p>${escapeHtml(config.scheduler.cancellation_policy)}</p>`
      : ''
  }`;
  const to = [b.guest, ...b.additional_guests].map((g) => ({ email: g.email, ...(g.name ? { name: g.name } : {}) }));
  return { to, subject: `${subject}: ${b.title}`, body };
}

/** The organizer's request to confirm or decline a pending booking (English), with the confirmation link. */
export function organizerRequestMail(
  config: ConfigurationRecord,
  b: BookingRecord,
  confirmLink: string | undefined,
): OutboxEntry[] {
  if (config.event_booking.disable_emails === true) return [];
  const rows: [string, string][] = [
    ['When', whenLine(b, 'en')],
    ['Guest', `${b.guest.name} <${b.guest.email}>`],
    ...Object.entries(b.additional_fields).map(([k, v]) => [k, String(v)] as [string, string]),
  ];
  const body = `<p>${escapeHtml(b.guest.name)} asked to book <strong>${escapeHtml(b.title)}</strong>. Confirm or decline it:</p>${table(rows)}${
    confirmLink
      ? `<p><a href="${escapeHtml(confirmLink)}">Confirm or decline</a></p>`
      : '<p>Confirm or decline it with PUT /v3/scheduling/bookings/{booking_id}.</p>'
  }`;
  return [
    job(b, 'booking confirmation request', {
      to: [{ email: b.organizer.email, ...(b.organizer.name ? { name: b.organizer.name } : {}) }],
      subject: `Confirm booking: ${b.title} with ${b.guest.name}`,
      body,
    }),
  ];
}

/** A reminder of an upcoming booking: to the guest, the organizer (`host`) or both (`all`), with its own subject if set. */
export function reminderMail(
  config: ConfigurationRecord,
  b: BookingRecord,
  reminder: { recipient?: 'all' | 'host' | 'guest' | undefined; email_subject?: string | undefined },
): OutboxEntry[] {
  const recipient = reminder.recipient ?? 'all';
  const out: OutboxEntry[] = [];
  if (recipient !== 'host') {
    const message = guestMessage(config, b, 'reminder', undefined);
    out.push(
      job(b, 'booking reminder', {
        ...message,
        ...(reminder.email_subject ? { subject: reminder.email_subject } : {}),
      }),
    );
  }
  if (recipient !== 'guest') {
    const body = `<p>Reminder: <strong>${escapeHtml(b.title)}</strong> with ${escapeHtml(b.guest.name)} &lt;${escapeHtml(b.guest.email)}&gt;</p>${table([['When', whenLine(b, 'en')]])}`;
    out.push(
      job(b, 'booking reminder (host)', {
        to: [{ email: b.organizer.email }],
        subject: reminder.email_subject ?? `Reminder: ${b.title} with ${b.guest.name}`,
        body,
      }),
    );
  }
  return out;
}
