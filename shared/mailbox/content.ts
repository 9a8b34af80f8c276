import { ANSWER_BUDGET_BYTES } from '#shared/answer-limits';

/**
 * Which content of a message or draft an answer carries, decided before anything is read from S3.
 * An object answers whole when it fits the answer budget; otherwise its raw MIME, then its body,
 * move behind a URL (views.ts, MovedContent). Sizes not recorded (objects stored before sizes were)
 * count as fitting: the view is measured once built and moved then (`settle`).
 */
export interface ContentSizes {
  /** JSON bytes of the view without body and raw MIME. */
  base: number;
  /** Bytes of the body, if known. */
  body?: number;
  /** Bytes of the raw MIME as it appears in the answer (base64url), if asked for and known; 0 if not asked for. */
  raw?: number;
}

export interface ContentPlan {
  moveRaw: boolean;
  moveBody: boolean;
  /** Expected JSON bytes of the view under this plan. */
  estimate: number;
}

/** A URL in JSON and the field that names it: what a moved content costs in the answer. */
const MOVED_BYTES = 1200;

export function planContent(sizes: ContentSizes, budget = ANSWER_BUDGET_BYTES): ContentPlan {
  const body = sizes.body ?? 0;
  const raw = sizes.raw ?? 0;
  const moveRaw = raw > 0 && sizes.base + body + raw > budget;
  const withRaw = moveRaw ? MOVED_BYTES : raw;
  const moveBody = body > 0 && sizes.base + body + withRaw > budget;
  return { moveRaw, moveBody, estimate: sizes.base + withRaw + (moveBody ? MOVED_BYTES : body) };
}

/** Base64 (url) length of `bytes` bytes, unpadded. */
export const base64Length = (bytes: number) => Math.ceil((bytes * 4) / 3);
