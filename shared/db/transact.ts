import { TransactionCanceledException } from '@aws-sdk/client-dynamodb';
import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { dynamo, type TransactItem } from '#shared/aws/dynamodb';

/**
 * The one way repositories write several items at once. Each item has a name, and a cancelled
 * transaction is reported by the names whose condition failed, never by position, so that adding
 * an item to a transaction cannot change what a failure means.
 *
 * A transaction cancelled only because another one was touching the same items at that moment
 * (`TransactionConflict`) decided nothing, so it is tried again, a few times with jitter, before
 * it is reported.
 */
export type NamedTransactItem = readonly [name: string, item: TransactItem];
export type NamedItems = readonly NamedTransactItem[];

/** Thrown when one or more named conditions failed; `failed` lists their names in transaction order. */
export class TransactionConditionError extends Error {
  constructor(
    readonly failed: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(`Transaction condition failed: ${failed.join(', ')}`, options);
    this.name = 'TransactionConditionError';
  }

  /** Whether the condition of `name` (or of any of `names`) failed. */
  has(...names: string[]): boolean {
    return names.some((name) => this.failed.includes(name));
  }
}

const CONFLICT_RETRIES = 4;
const pause = (attempt: number) => new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * 2 ** attempt));

export async function transactWrite(items: NamedItems): Promise<void> {
  const names = items.map(([name]) => name);
  if (new Set(names).size !== names.length)
    throw new Error(`Transaction item names must be unique: ${names.join(', ')}`);
  for (let attempt = 0; ; attempt++) {
    try {
      await dynamo.send(new TransactWriteCommand({ TransactItems: items.map(([, item]) => item) }));
      return;
    } catch (error) {
      if (!(error instanceof TransactionCanceledException)) throw error;
      const codes = (error.CancellationReasons ?? []).map((reason) => reason.Code ?? 'None');
      const failed = names.filter((_, i) => codes[i] === 'ConditionalCheckFailed');
      if (failed.length) throw new TransactionConditionError(failed, { cause: error });
      if (codes.includes('TransactionConflict') && attempt < CONFLICT_RETRIES) {
        await pause(attempt);
        continue;
      }
      throw error;
    }
  }
}
