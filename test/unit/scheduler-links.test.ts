import { describe, expect, it } from 'vitest';
import { configurationLinks, linkProblem } from '#shared/scheduling/urls';

/** The links a scheduler configuration may store: https, and http to loopback only in local mode. */
describe('Function: linkProblem', () => {
  const field = 'scheduler.confirmation_redirect_url';
  const deployed = { local: false };
  const local = { local: true };

  it('accepts https in both modes', () => {
    for (const policy of [deployed, local]) {
      expect(linkProblem(field, 'https://app.example.com/booked?x=1', policy)).toBeUndefined();
      expect(linkProblem(field, 'HTTPS://APP.EXAMPLE.COM/', policy)).toBeUndefined();
    }
  });

  it('accepts plain http to loopback hosts only in local mode', () => {
    for (const url of [
      'http://127.0.0.1:8080/x',
      'http://localhost/x',
      'http://LOCALHOST./x',
      'http://[::1]:3000/x',
      'http://127.9.9.9/x',
    ]) {
      expect(linkProblem(field, url, local), url).toBeUndefined();
      expect(linkProblem(field, url, deployed), url).toMatch(
        /^'scheduler\.confirmation_redirect_url' must use https; got a 'http' URL$/,
      );
    }
  });

  it('refuses script and data schemes, http to other hosts and relative URLs, naming the field', () => {
    const cases: [string, RegExp][] = [
      ['javascript:alert(1)', /got a 'javascript' URL/],
      ['  JavaScript:alert(1)', /got a 'javascript' URL/],
      ['vbscript:msgbox(1)', /got a 'vbscript' URL/],
      ['data:text/html,<script>alert(1)</script>', /got a 'data' URL/],
      ['http://example.com/x', /got a 'http' URL to example\.com/],
      ['http://10.0.0.1/x', /got a 'http' URL to 10\.0\.0\.1/],
      ['http://localhost.example.com/x', /got a 'http' URL/],
      ['ftp://example.com/x', /got a 'ftp' URL/],
      ['/booked', /must be an absolute https URL/],
      ['booked.example.com', /must be an absolute https URL/],
    ];
    for (const [url, message] of cases) {
      const problem = linkProblem(field, url, local);
      expect(problem, url).toMatch(message);
      expect(problem).toContain(`'${field}'`);
    }
  });
});

describe('Function: configurationLinks', () => {
  it('lists every stored link by field name, leaving out unset ones', () => {
    expect(
      configurationLinks({
        scheduler: {
          confirmation_redirect_url: 'a',
          rescheduling_url: 'b',
          cancellation_url: 'c',
          organizer_confirmation_url: 'd',
        },
        event_booking: { conferencing: { details: { url: 'e' } } },
      }),
    ).toEqual([
      ['scheduler.confirmation_redirect_url', 'a'],
      ['scheduler.rescheduling_url', 'b'],
      ['scheduler.cancellation_url', 'c'],
      ['scheduler.organizer_confirmation_url', 'd'],
      ['event_booking.conferencing.details.url', 'e'],
    ]);
    expect(configurationLinks({ scheduler: {}, event_booking: {} })).toEqual([]);
  });
});
