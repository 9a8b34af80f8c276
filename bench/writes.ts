/**
 * Counts the DynamoDB items a piece of code writes, by kind of request, with a middleware on the
 * one document client of the functions (shared/aws/dynamodb.ts): PutItem, UpdateItem and DeleteItem
 * write one item each, BatchWriteItem one per request in it, TransactWriteItems one per Put, Update
 * and Delete (a ConditionCheck writes nothing). What DynamoDB bills as writes, item by item.
 */
export interface WriteCount {
  items: number;
  byCommand: Record<string, number>;
}

type Middleware = (
  next: (args: { input: Record<string, unknown> }) => Promise<unknown>,
  context: { commandName?: string },
) => (args: { input: Record<string, unknown> }) => Promise<unknown>;

export function writeCounter(client: {
  middlewareStack: { add(m: Middleware, o: { step: 'initialize'; name: string }): void; remove(name: string): boolean };
}) {
  let current: WriteCount | undefined;
  const name = `count-writes-${Math.random().toString(36).slice(2)}`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (current) {
        const command = context.commandName ?? 'unknown';
        const input = args.input;
        let items = 0;
        if (/^(Put|Update|Delete)(Item)?Command$/.test(command)) items = 1;
        else if (/^BatchWrite(Item)?Command$/.test(command))
          items = Object.values((input.RequestItems ?? {}) as Record<string, unknown[]>).reduce(
            (n, list) => n + list.length,
            0,
          );
        else if (/^TransactWrite(Items)?Command$/.test(command))
          items = ((input.TransactItems ?? []) as Record<string, unknown>[]).filter((i) => !i.ConditionCheck).length;
        if (items && process.env.WRITES_TRACE) {
          const keys = /^TransactWrite/.test(command)
            ? ((input.TransactItems ?? []) as Record<string, Record<string, Record<string, unknown>>>[]).map((i) => {
                const op = Object.keys(i)[0]!;
                const k = (i[op]!.Item ?? i[op]!.Key) as Record<string, unknown>;
                return `${op} ${String(k?.pk).replace(/[0-9a-z]{26}/g, '…')} ${String(k?.sk)
                  .replace(/[0-9a-z]{26}/g, '…')
                  .slice(0, 40)}`;
              })
            : [command];
          console.log(keys.join('\n'));
        }
        if (items) {
          current.items += items;
          current.byCommand[command] = (current.byCommand[command] ?? 0) + items;
        }
      }
      return next(args);
    },
    { step: 'initialize', name },
  );
  return {
    async count<T>(action: () => Promise<T>): Promise<{ result: T; writes: WriteCount }> {
      current = { items: 0, byCommand: {} };
      try {
        const result = await action();
        return { result, writes: current };
      } finally {
        current = undefined;
      }
    },
  };
}
