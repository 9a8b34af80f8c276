import { CONTRACT_TRIGGER_TYPES } from '#schemas/notifications';
import { TRIGGER_TYPES } from '#schemas/webhooks';
import { InvalidRequestError } from '#shared/errors';

/** Suffixes a notification type can carry without a subscription of its own. */
const SUFFIXES = ['.transformed', '.truncated', '.cleaned', '.metadata'];

/** `message.created.cleaned.transformed.truncated` → `message.created`. */
export function baseTrigger(type: string): string {
  let base = type;
  for (let changed = true; changed;) {
    changed = false;
    for (const suffix of SUFFIXES) {
      if (base.endsWith(suffix)) {
        base = base.slice(0, -suffix.length);
        changed = true;
      }
    }
  }
  return base;
}

/**
 * Whether a destination subscribed to `triggers` receives a notification of `type`: a base trigger
 * (`message.created`) receives its suffixed variants too; a variant trigger
 * (`message.created.metadata`) receives that variant, with any further suffixes, and nothing else.
 */
export function subscribed(triggers: readonly string[], type: string): boolean {
  const base = baseTrigger(type);
  return triggers.some((t) => t === base || type === t || type.startsWith(`${t}.`));
}

/**
 * Accepts trigger types Switchboard emits; refuses the contract's others as not yet available, and
 * anything else as unknown, each 400 listing the valid ones.
 */
export function checkTriggerTypes(triggers: readonly string[], field = 'trigger_types'): string[] {
  const available = new Set<string>(TRIGGER_TYPES);
  const contract = new Set<string>(CONTRACT_TRIGGER_TYPES);
  const unknown = triggers.filter((t) => !contract.has(t) && !available.has(t));
  if (unknown.length)
    throw new InvalidRequestError(
      `'${field}' has unknown trigger type(s) ${unknown.join(', ')}; valid trigger types: ${TRIGGER_TYPES.join(', ')}`,
    );
  const later = triggers.filter((t) => !available.has(t));
  if (later.length) {
    throw new InvalidRequestError(
      `'${field}' names trigger type(s) not available yet: ${later.join(', ')} (their features are not in this deployment); valid trigger types: ${TRIGGER_TYPES.join(', ')}`,
    );
  }
  return [...triggers];
}
