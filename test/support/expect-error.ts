import { expect } from 'vitest';
import type { ApiResponse } from './api';

/** The error envelope `{request_id, error: {type, message}}` with this status and type; the message exactly (a string) or matching (a RegExp). */
export function expectError(r: ApiResponse, status: number, type: string, message: string | RegExp) {
  expect(r.status, r.text).toBe(status);
  expect(r.body.error.type).toBe(type);
  if (typeof message === 'string') expect(r.body.error.message).toBe(message);
  else expect(r.body.error.message).toMatch(message);
  expect(r.body.request_id).toMatch(/^req_/);
}

/** A 400 invalid_request_error with this message. */
export const expectInvalid = (r: ApiResponse, message: string | RegExp) =>
  expectError(r, 400, 'invalid_request_error', message);
