/**
 * Tiered merging: pending documents become a level-0 segment; whenever a level holds MERGE_FACTOR
 * segments they are merged into one of the next level. A mailbox of n messages then holds at most
 * (MERGE_FACTOR - 1) segments per level and log_8(n) levels (about 40 segments at 100,000
 * messages), and each document is rewritten once per level. A segment whose deleted documents reach
 * DELETED_REWRITE_FRACTION is rewritten without them.
 */
export const MERGE_FACTOR = 8;
export const DELETED_REWRITE_FRACTION = 0.2;

export interface TierInput {
  id: string;
  level: number;
  docs: number;
  deleted: number;
}

/** A source of a merge step: an existing segment, the pending documents, or an earlier step's output. */
export type MergeSource = { segment: string } | { pending: true } | { step: number };

export interface MergeStep {
  sources: MergeSource[];
  level: number;
}

/**
 * The merges to run, in order (a step may consume an earlier step's output); segments not named
 * by any step stay as they are. The output of the last step of a chain is the one written.
 */
export function planMerges(segments: readonly TierInput[], pending: boolean): MergeStep[] {
  const steps: MergeStep[] = [];
  const byLevel = new Map<number, MergeSource[]>();
  const add = (level: number, source: MergeSource) => byLevel.set(level, [...(byLevel.get(level) ?? []), source]);
  const rewritten = new Set<string>();
  for (const s of segments) {
    if (s.deleted > 0 && s.deleted >= Math.max(1, s.docs * DELETED_REWRITE_FRACTION)) rewritten.add(s.id);
  }
  for (const s of [...segments].sort((a, b) => a.level - b.level)) add(s.level, { segment: s.id });
  let pendingPlaced = !pending;
  const levels = () => [...byLevel.keys()].sort((a, b) => a - b);
  for (let level = 0; level <= Math.max(0, ...levels()); level++) {
    const members = byLevel.get(level) ?? [];
    if (!pendingPlaced && level === 0) {
      members.push({ pending: true });
      pendingPlaced = true;
      byLevel.set(0, members);
      if (members.length < MERGE_FACTOR) {
        // Pending documents alone make a new level-0 segment.
        steps.push({ sources: [{ pending: true }], level: 0 });
        members.pop();
        members.push({ step: steps.length - 1 });
        continue;
      }
    }
    if (members.length >= MERGE_FACTOR) {
      steps.push({ sources: [...members], level: level + 1 });
      byLevel.set(level, []);
      add(level + 1, { step: steps.length - 1 });
    }
  }
  // Segments with many deleted documents that no merge above rewrites: rewritten alone, same level.
  const consumed = new Set(steps.flatMap((s) => s.sources.flatMap((src) => ('segment' in src ? [src.segment] : []))));
  for (const s of segments) {
    if (rewritten.has(s.id) && !consumed.has(s.id)) steps.push({ sources: [{ segment: s.id }], level: s.level });
  }
  return steps;
}

/** Steps whose output no later step consumes: the segments a plan writes. */
export function finalSteps(steps: readonly MergeStep[]): number[] {
  const consumed = new Set(steps.flatMap((s) => s.sources.flatMap((src) => ('step' in src ? [src.step] : []))));
  return steps.map((_, i) => i).filter((i) => !consumed.has(i));
}
