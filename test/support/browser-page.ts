import type { Browser, BrowserContext, Page } from 'playwright-core';

/** What the browser tests of Switchboard's own pages (hosted login, hosted IMAP) check on each page. */

/** A browser context that records every request it makes and every message of its console. */
export async function openContext(
  browser: Browser,
  viewport: { width: number; height: number },
): Promise<{ context: BrowserContext; page: Page; requests: string[]; consoleMessages: string[]; errors: string[] }> {
  const context = await browser.newContext({ viewport, locale: 'en-US' });
  const page = await context.newPage();
  const requests: string[] = [];
  const consoleMessages: string[] = [];
  const errors: string[] = [];
  context.on('request', (request) => requests.push(request.url()));
  page.on('console', (message) => consoleMessages.push(message.text()));
  page.on('pageerror', (error) => errors.push(error.message));
  return { context, page, requests, consoleMessages, errors };
}

/** What the console said about the Content-Security-Policy (a blocked resource, form or navigation). */
export const violations = (consoleMessages: string[]) =>
  consoleMessages.filter((message) => /Content Security Policy/i.test(message));

/** The directives of a Content-Security-Policy header, each with its sources. */
export const directives = (header: string) =>
  new Map(
    header
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...sources]) => [name!, sources]),
  );

/** What has the focus after each press of Tab from the top of the page: `tag id-or-text`. */
export async function tabOrder(page: Page, presses: number): Promise<string[]> {
  const reached: string[] = [];
  for (let i = 0; i < presses; i++) {
    await page.keyboard.press('Tab');
    reached.push(
      await page.locator(':focus').evaluate((el) => `${el.tagName.toLowerCase()} ${el.id || el.textContent?.trim()}`),
    );
  }
  return reached;
}
