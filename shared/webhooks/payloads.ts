import { HOSTED_PROVIDER } from '#schemas/grants';
import { IMAP_PROVIDER } from '#shared/providers/names';
import type { Notification } from '#shared/notifications/notification';
import { env } from '#shared/config';
import { deliverabilityExample } from '#shared/deliverability/examples';
import { newId, type ApplicationId } from '#shared/ids';
import { clock } from '#shared/time';
import { baseTrigger } from '#shared/webhooks/triggers';

/**
 * What receivers get: the published notification with `webhook_delivery_attempt` added (after
 * `time`, before `data`), and example payloads for POST /v3/webhooks/mock-payload and test events.
 */
type DeliveredPayload = Omit<Notification, 'data'> & { webhook_delivery_attempt: number; data: Notification['data'] };

export function deliveredPayload(notification: Notification, attempt: number): DeliveredPayload {
  const { specversion, type, source, id, time, data } = notification;
  return { specversion, type, source, id, time, webhook_delivery_attempt: attempt, data };
}

export const deliveredBody = (notification: Notification, attempt: number): Buffer =>
  Buffer.from(JSON.stringify(deliveredPayload(notification, attempt)));

const SOURCE = env.notificationSource();
const EXAMPLE_GRANT_ID = 'grant_01jd6abcdefghjkmnpqrstvwxy';

function exampleObject(base: string, now: number): object {
  const grantId = EXAMPLE_GRANT_ID;
  const participant = (email: string, name: string) => ({ email, name });
  const message = {
    id: 'msg_01jd6abcdefghjkmnpqrstvwxy',
    object: 'message',
    grant_id: grantId,
    thread_id: 'thr_01jd6abcdefghjkmnpqrstvwxy',
    subject: 'Example subject',
    from: [participant('ann@example.com', 'Ann')],
    to: [participant('agent@agents.example.com', 'Agent')],
    cc: [],
    bcc: [],
    reply_to: [],
    date: now,
    unread: true,
    starred: false,
    folders: ['inbox'],
    snippet: 'Hello, this is an example message.',
    body: '<p>Hello, this is an example message.</p>',
    attachments: [],
    metadata: {},
    created_at: now,
  };
  switch (base) {
    case 'grant.created':
    case 'grant.updated':
    case 'grant.deleted':
    case 'grant.expired':
      return {
        id: grantId,
        grant_status: base === 'grant.expired' ? 'invalid' : 'valid',
        provider: HOSTED_PROVIDER,
        scope: ['email', 'calendar'],
        email: 'agent@agents.example.com',
        settings: {},
        created_at: now,
        updated_at: now,
        provider_user_id: 'agent@agents.example.com',
        blocked: false,
      };
    case 'message.created':
    case 'message.updated':
      return message;
    case 'message.opened':
      return {
        message_id: message.id,
        label: 'welcome',
        sender_app_id: 'app_01jd6abcdefghjkmnpqrstvwxy',
        timestamp: now,
        message_data: { count: 1, timestamp: now },
        recents: [{ opened_id: 0, ip: '192.0.2.10', user_agent: 'Mozilla/5.0', timestamp: now }],
      };
    case 'message.link_clicked':
      return {
        message_id: message.id,
        label: 'welcome',
        sender_app_id: 'app_01jd6abcdefghjkmnpqrstvwxy',
        timestamp: now,
        link_data: [{ url: 'https://example.com/offer', count: 1 }],
        recents: [{ click_id: '0', link_index: '0', ip: '192.0.2.10', user_agent: 'Mozilla/5.0', timestamp: now }],
      };
    case 'thread.replied':
      return {
        message_id: 'msg_01jd6bcdefghjkmnpqrstvwxyz',
        root_message_id: message.id,
        thread_id: message.thread_id,
        label: 'welcome',
        sender_app_id: 'app_01jd6abcdefghjkmnpqrstvwxy',
        timestamp: now,
        reply_data: { count: 1 },
      };
    case 'message.bounce_detected':
      return {
        bounced_address: 'nobody@example.net',
        bounce_reason: 'smtp; 550 5.1.1 <nobody@example.net>: Recipient address rejected: User unknown',
        bounce_date: now,
        type: 'mailbox',
        status: '5.1.1',
        code: 550,
        origin: {
          id: message.id,
          grant_id: grantId,
          thread_id: message.thread_id,
          subject: message.subject,
          date: now - 60,
          from: [participant('agent@agents.example.com', 'Agent')],
          to: [participant('nobody@example.net', 'Nobody')],
          cc: [],
          bcc: [],
        },
      };
    case 'message.deleted':
      return { id: message.id, object: 'message', grant_id: grantId };
    case 'grant.imap_sync_completed':
      return {
        id: grantId,
        grant_id: grantId,
        provider: IMAP_PROVIDER,
        email: 'ann@example.com',
        folders: 6,
        messages: 1250,
        completed_at: now,
      };
    case 'folder.created':
    case 'folder.updated':
    case 'folder.deleted':
      return {
        id: 'fld_01jd6abcdefghjkmnpqrstvwxy',
        object: 'folder',
        grant_id: grantId,
        name: 'Receipts',
        system_folder: false,
        attributes: [],
        total_count: 0,
        unread_count: 0,
        child_count: 0,
      };
    case 'calendar.created':
    case 'calendar.updated':
    case 'calendar.deleted':
      return {
        id: 'cal_01jd6abcdefghjkmnpqrstvwxy',
        object: 'calendar',
        grant_id: grantId,
        name: 'Team',
        timezone: 'Europe/Berlin',
        is_primary: false,
        read_only: false,
        is_owned_by_user: true,
        owner_email: 'agent@agents.example.com',
        metadata: {},
        created_at: now,
        updated_at: now,
      };
    case 'message.send_success':
    case 'message.send_failed':
      return {
        ...message,
        folders: ['sent'],
        unread: false,
        status: base === 'message.send_success' ? 'sent' : 'failed',
        reason: base === 'message.send_success' ? '' : 'The recipient server refused the message',
        request_id: 'req_01jd6abcdefghjkmnpqrstvwxy',
      };
    case 'event.created':
    case 'event.updated':
    case 'event.deleted':
      return {
        id: 'evt_01jd6abcdefghjkmnpqrstvwxy',
        object: 'event',
        grant_id: grantId,
        calendar_id: 'cal_01jd6abcdefghjkmnpqrstvwxy',
        ical_uid: 'evt_01jd6abcdefghjkmnpqrstvwxy@agents.example.com',
        organizer: { email: 'agent@agents.example.com' },
        title: 'Planning',
        busy: true,
        status: base === 'event.deleted' ? 'cancelled' : 'confirmed',
        participants: [{ email: 'ann@example.com', name: 'Ann', status: 'yes' }],
        metadata: {},
        when: {
          object: 'timespan',
          start_time: now + 3600,
          end_time: now + 7200,
          start_timezone: 'UTC',
          end_timezone: 'UTC',
        },
        created_at: now,
        updated_at: now,
      };
    case 'contact.updated':
    case 'contact.deleted':
      return {
        id: 'ctc_01jd6abcdefghjkmnpqrstvwxy',
        object: 'contact',
        grant_id: grantId,
        source: 'address_book',
        given_name: 'Ann',
        surname: 'Lee',
        company_name: 'Example Inc.',
        emails: [{ email: 'ann@example.com', type: 'work' }],
        phone_numbers: [{ number: '+1 555 0100', type: 'mobile' }],
        physical_addresses: [],
        im_addresses: [],
        web_pages: [],
        groups: [],
        created_at: now,
        updated_at: now,
      };
    case 'booking.created':
    case 'booking.pending':
    case 'booking.rescheduled':
    case 'booking.cancelled':
    case 'booking.reminder':
      return {
        booking_id: 'bkg_01jd6abcdefghjkmnpqrstvwxy',
        event_id: 'evt_01jd6abcdefghjkmnpqrstvwxy',
        calendar_id: 'cal_01jd6abcdefghjkmnpqrstvwxy',
        configuration_id: 'cfg_01jd6abcdefghjkmnpqrstvwxy',
        title: 'Intro call',
        organizer: { email: 'agent@agents.example.com' },
        guest: { name: 'Ann', email: 'ann@example.com' },
        additional_guests: [],
        participants: [{ email: 'agent@agents.example.com' }],
        status: base === 'booking.pending' ? 'pending' : base === 'booking.cancelled' ? 'cancelled' : 'booked',
        start_time: now + 86400,
        end_time: now + 88200,
        timezone: 'UTC',
        email_language: 'en',
        additional_fields: {},
        created_at: now,
        updated_at: now,
      };
    default:
      return deliverabilityExample(base, now) ?? {};
  }
}

/** An example notification of `type` (as published, before delivery adds the attempt number). */
export function exampleNotification(type: string, applicationId: ApplicationId | string): Notification {
  const now = clock.nowSeconds();
  const base = baseTrigger(type);
  return {
    specversion: '1.0',
    type: type as Notification['type'],
    source: SOURCE,
    id: newId('notification'),
    time: now,
    data: {
      application_id: applicationId as ApplicationId,
      grant_id:
        base.startsWith('booking') || base.startsWith('message.transactional.') ? null : (EXAMPLE_GRANT_ID as never),
      object: exampleObject(base, now),
    },
  };
}
