import { createHash, timingSafeEqual } from 'node:crypto';
import type { BookingRecord } from '#shared/db/scheduling';

/**
 * Booking references: `base64url(<configuration>:<booking>:<salt>)`, what the guest keeps to
 * reschedule or cancel (and the organizer's confirmation link carries). Only the salt's SHA-256 is
 * stored with the booking.
 */
export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

export function bookingReference(configurationId: string, bookingId: string, salt: string): string {
  return Buffer.from(`${configurationId}:${bookingId}:${salt}`, 'utf8').toString('base64url');
}

export function parseBookingReference(
  reference: string,
): { configuration_id: string; booking_id: string; salt: string } | undefined {
  const [configuration_id, booking_id, salt, ...rest] = Buffer.from(reference, 'base64url').toString('utf8').split(':');
  return configuration_id && booking_id && salt && !rest.length ? { configuration_id, booking_id, salt } : undefined;
}

export const saltMatches = (record: Pick<BookingRecord, 'salt_hash'>, salt: string) => {
  const [a, b] = [Buffer.from(record.salt_hash, 'hex'), Buffer.from(sha256(salt), 'hex')];
  return a.length === b.length && timingSafeEqual(a, b);
};
