import { vi } from 'vitest';
import { dynamo } from '#shared/aws/dynamodb';
import type { Key } from '#shared/db/keys';

/**
 * A request's process dying between two steps of a send, as far as one grant's data goes: from the
 * point of death on, every storage call that names the grant fails, so nothing the request might
 * still try (a catch block putting something back) reaches the store; the rest of the test process
 * (the jobs worker, other grants) goes on. Undone by vi.restoreAllMocks().
 *
 * `after-claim`: dies right after the first write to `claimed` (the send's claim) has gone through.
 * `at-commit`: dies at the transaction that would commit the grant's Sent copy (a message item).
 */
export type DeathPoint = 'after-claim' | 'at-commit';

type TransactItem = {
  Put?: { Item?: Record<string, unknown> };
  Update?: { Key?: Key };
  Delete?: { Key?: Key };
  ConditionCheck?: { Key?: Key };
};
type Command = {
  constructor: { name: string };
  input: Record<string, unknown> & { Key?: Key; Item?: Record<string, unknown>; TransactItems?: TransactItem[] };
};
const WRITES = new Set(['PutCommand', 'UpdateCommand', 'DeleteCommand', 'TransactWriteCommand']);

/** The keys a command names. */
function keysOf(command: Command): Key[] {
  const items = command.input.TransactItems ?? [];
  return [
    command.input.Key,
    command.input.Item as Key | undefined,
    ...items.flatMap((i) => [i.Put?.Item as Key | undefined, i.Update?.Key, i.Delete?.Key, i.ConditionCheck?.Key]),
  ].filter((k): k is Key => !!k);
}

const writes = (command: Command, key: Key) =>
  WRITES.has(command.constructor.name) && keysOf(command).some((k) => k.pk === key.pk && k.sk === key.sk);
const commitsMessageOf = (command: Command, grantId: string) =>
  command.constructor.name === 'TransactWriteCommand' &&
  (command.input.TransactItems ?? []).some((i) => i.Put?.Item?.entity === 'message' && i.Put.Item.grant_id === grantId);

/** Arms the death of the grant's process at `point`; answers whether it died. */
export function dieAt(point: DeathPoint, grantId: string, claimed: Key): () => boolean {
  const send = dynamo.send.bind(dynamo);
  let claimedNow = false;
  let dead = false;
  vi.spyOn(dynamo, 'send').mockImplementation(((command: Command) => {
    const ours = JSON.stringify(command.input).includes(grantId);
    if (
      ours &&
      !dead &&
      ((point === 'at-commit' && commitsMessageOf(command, grantId)) || (point === 'after-claim' && claimedNow))
    )
      dead = true;
    if (ours && dead) return Promise.reject(new Error('the process died'));
    if (point === 'after-claim' && !claimedNow && writes(command, claimed))
      return send(command as never).then((out: unknown) => ((claimedNow = true), out));
    return send(command as never);
  }) as never);
  return () => dead;
}
