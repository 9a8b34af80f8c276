import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeAgentGrant } from '../support/factories';
import { useApi } from '../support/harness';
import { jobsDone } from '../support/outbox-relay';
import { createTestQueue } from '../support/queues';

/**
 * The public booking page in headless Chromium (the Debian `chromium` package driven by
 * playwright-core): a guest picks a slot and books; the event is on the organizer's calendar and the
 * confirmation (the organizer's invitation) in the guest's inbox; the guest then reschedules and
 * cancels through the link the confirmation shows. Screenshots at phone and desktop widths are kept
 * in test/artifacts/.
 */
const ARTIFACTS = join(process.cwd(), 'test', 'artifacts');
let browser: Browser;
beforeAll(async () => {
  process.env.FANOUT_QUEUE_URL = await createTestQueue('booking-page-fanout');
  let executablePath = process.env.CHROMIUM_PATH;
  if (!executablePath) {
    try {
      executablePath = execFileSync('which', ['chromium'], { encoding: 'utf8' }).trim();
    } catch {
      throw new Error(
        'The booking page test needs Chromium: apt-get install -y chromium (or set CHROMIUM_PATH); .ci/run installs it',
      );
    }
  }
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
  mkdirSync(ARTIFACTS, { recursive: true });
});
afterAll(async () => browser?.close());
const { api, gateway } = useApi();

const DAY = 86_400;

describe('booking page', () => {
  it('books, reschedules and cancels from the browser, at phone and desktop widths', async () => {
    const [organizer, guest] = await Promise.all([makeAgentGrant(api), makeAgentGrant(api)]);
    const slug = `meet-${organizer.id.slice(-10).toLowerCase()}`;
    // Not today nor tomorrow: the first day offered is then whole (the 24-hour notice ends tomorrow), whatever the time of day.
    const today = new Date().getUTCDay();
    const openDays = [0, 1, 2, 3, 4, 5, 6].filter((d) => d !== today && d !== (today + 1) % 7);
    const created = await api.post(`/v3/grants/${organizer.id}/scheduling/configurations`, {
      slug,
      participants: [
        {
          email: organizer.email,
          name: 'Bo Organizer',
          is_organizer: true,
          availability: {
            calendar_ids: ['primary'],
            open_hours: [{ days: openDays, timezone: 'UTC', start: '9:00', end: '12:00' }],
          },
          booking: { calendar_id: 'primary' },
        },
      ],
      availability: { duration_minutes: 30, interval_minutes: 30 },
      event_booking: {
        title: 'Intro call',
        description: 'Half an hour to get to know each other.',
        location: 'Video call',
      },
      scheduler: {
        min_booking_notice: 24 * 60,
        available_days_in_future: 14,
        cancellation_policy: 'Cancel up to an hour before.',
        additional_fields: { company: { label: 'Company', type: 'text', required: false, order: 1 } },
      },
    });
    expect(created.status, created.text).toBe(201);

    for (const [label, viewport] of [
      ['phone', { width: 390, height: 844 }],
      ['desktop', { width: 1280, height: 900 }],
    ] as const) {
      const context = await browser.newContext({ viewport, timezoneId: 'UTC', locale: 'en-US' });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      const response = await page.goto(`${gateway().url}/scheduling/${slug}?tz=UTC`);
      expect(response?.status()).toBe(200);
      expect(response?.headers()['content-security-policy']).toContain("script-src 'nonce-");
      await expect.poll(() => page.locator('button.slot').count(), { timeout: 15_000 }).toBeGreaterThan(0);
      await page.screenshot({ path: join(ARTIFACTS, `booking-page-${label}.png`), fullPage: true });
      expect(errors).toEqual([]);
      await context.close();
    }

    // Book by keyboard-reachable controls: the first day is selected, take its second time.
    const context = await browser.newContext({
      viewport: { width: 1280, height: 900 },
      timezoneId: 'UTC',
      locale: 'en-US',
    });
    const page = await context.newPage();
    await page.goto(`${gateway().url}/scheduling/${slug}?tz=UTC`);
    const chosen = page.locator('button.slot').nth(1);
    const shown = /^(\d{1,2}):(\d{2})\s*([AP]M)$/i.exec(((await chosen.textContent()) ?? '').trim());
    expect(shown, 'a slot label such as 9:30 AM').not.toBeNull();
    const chosenMinutes =
      ((Number(shown![1]) % 12) + (shown![3]!.toUpperCase() === 'PM' ? 12 : 0)) * 60 + Number(shown![2]);
    await chosen.click();
    await expect.poll(() => page.locator('#form-panel').isVisible()).toBe(true);
    await page.getByLabel('Your name').fill('Gus Guest');
    await page.getByLabel('Your email').fill(guest.email);
    await page.getByLabel('Company (optional)').fill('Acme');
    await page.getByRole('button', { name: 'Book' }).click();
    await expect.poll(() => page.locator('#done').isVisible(), { timeout: 15_000 }).toBe(true);
    expect(await page.locator('#status').textContent()).toContain(`A confirmation is on its way to ${guest.email}`);
    await page.screenshot({ path: join(ARTIFACTS, 'booking-page-confirmed.png'), fullPage: true });

    // The event is on the organizer's calendar, with the guest.
    const now = Math.floor(Date.now() / 1000);
    const events = (
      await api.get(`/v3/grants/${organizer.id}/events?calendar_id=primary&start=${now}&end=${now + 15 * DAY}`)
    ).body.data as {
      id: string;
      title: string;
      participants: { email: string }[];
      when: { start_time: number };
    }[];
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ title: 'Intro call' });
    expect(events[0]!.participants.map((p) => p.email)).toContain(guest.email);
    expect(
      new Date(events[0]!.when.start_time * 1000).getUTCHours() * 60 +
        new Date(events[0]!.when.start_time * 1000).getUTCMinutes(),
    ).toBe(chosenMinutes);

    // The confirmation (the organizer's iCalendar invitation) is in the guest's inbox, and the booking on the guest's calendar.
    await expect
      .poll(
        async () => {
          await jobsDone();
          return ((await api.get(`/v3/grants/${guest.id}/messages?in=inbox`)).body.data as { subject: string }[]).map(
            (m) => m.subject,
          );
        },
        { timeout: 30_000 },
      )
      .toEqual([expect.stringContaining('Intro call')]);

    // Reschedule through the link the confirmation shows, then cancel.
    await page.locator('#reschedule-link').click();
    await expect.poll(() => page.locator('button.slot').count(), { timeout: 15_000 }).toBeGreaterThan(2);
    await page.locator('button.slot').nth(2).click();
    await page.getByRole('button', { name: 'Move the booking here' }).click();
    await expect.poll(() => page.locator('#status').textContent(), { timeout: 15_000 }).toBe('The booking is moved.');
    const moved = (
      await api.get(`/v3/grants/${organizer.id}/events?calendar_id=primary&start=${now}&end=${now + 15 * DAY}`)
    ).body.data as { when: { start_time: number } }[];
    expect(moved).toHaveLength(1);
    expect(moved[0]!.when.start_time).not.toBe(events[0]!.when.start_time);

    await page.getByLabel('Reason for cancelling (optional)').fill('Something came up');
    await page.getByRole('button', { name: 'Cancel this booking' }).click();
    await expect
      .poll(() => page.locator('#status').textContent(), { timeout: 15_000 })
      .toBe('The booking is cancelled.');
    expect(
      (await api.get(`/v3/grants/${organizer.id}/events?calendar_id=primary&start=${now}&end=${now + 15 * DAY}`)).body
        .data,
    ).toEqual([]);
    await context.close();

    // Unknown pages answer a page with the status, not a stack trace.
    const missing = await (await browser.newContext()).newPage();
    const notFound = await missing.goto(`${gateway().url}/scheduling/no-such-page-${Date.now()}`);
    expect(notFound?.status()).toBe(404);
    expect(await missing.locator('h1').textContent()).toBe('This page is not available');
  });
});
