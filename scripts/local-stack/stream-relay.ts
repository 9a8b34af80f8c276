import { DescribeTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  ExpiredIteratorException,
  GetRecordsCommand,
  GetShardIteratorCommand,
  TrimmedDataAccessException,
  type _Record as StreamRecord,
} from '@aws-sdk/client-dynamodb-streams';
import type { DynamoDBBatchResponse, DynamoDBRecord, DynamoDBStreamEvent } from 'aws-lambda';

/**
 * What Lambda's event source mapping does for a DynamoDB stream, for machines without one (DynamoDB
 * Local): reads every shard of the table's stream through the Streams API, hands each batch of
 * records to a consumer as the same event Lambda builds, and on a reported failure reads again from
 * the failed record (the function's `ReportBatchItemFailures` contract). Used by `npm start`, whose
 * consumer invokes the deployed-shape function through serverless-offline, and by the tests. Against
 * LocalStack or AWS, the real event source mapping does this instead.
 */
export type StreamConsumer = (event: DynamoDBStreamEvent) => Promise<DynamoDBBatchResponse | void>;

export interface StreamRelayOptions {
  tableName: string;
  consumer: StreamConsumer;
  /** `LATEST` (default): only what is written from now on; `TRIM_HORIZON`: everything retained. */
  from?: 'LATEST' | 'TRIM_HORIZON';
  /** Records handed over per event (Lambda's batch size). */
  batchSize?: number;
  /** Pause between reads of a shard that had nothing new, in ms. */
  idleMs?: number;
  /** Only these records are handed over (Lambda's filter criteria); the others are passed over. */
  filter?: (record: DynamoDBRecord) => boolean;
  onError?: (error: unknown) => void;
}

export interface StreamRelay {
  stop(): Promise<void>;
  /** Resolves once every record written before the call has been handed over and accepted. */
  drained(): Promise<void>;
}

/** A record as Lambda's event carries it: binary attributes as base64 text, times in seconds. */
function toLambdaRecord(record: StreamRecord, streamArn: string, region: string): DynamoDBRecord {
  const json = JSON.parse(
    JSON.stringify(record.dynamodb ?? {}, (_key, value: unknown) =>
      value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value,
    ),
    (_key, value: unknown) =>
      value && typeof value === 'object' && (value as { type?: string }).type === 'Buffer'
        ? Buffer.from((value as { data: number[] }).data).toString('base64')
        : value,
  ) as Record<string, unknown>;
  const created = record.dynamodb?.ApproximateCreationDateTime;
  return {
    eventID: record.eventID,
    eventName: record.eventName as DynamoDBRecord['eventName'],
    eventVersion: record.eventVersion ?? '1.1',
    eventSource: 'aws:dynamodb',
    awsRegion: region,
    eventSourceARN: streamArn,
    dynamodb: {
      ...json,
      ...(created ? { ApproximateCreationDateTime: Math.floor(new Date(created).getTime() / 1000) } : {}),
    },
  } as DynamoDBRecord;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function startStreamRelay(options: StreamRelayOptions): Promise<StreamRelay> {
  const dynamo = new DynamoDBClient({});
  // DynamoDB Local (and LocalStack) serve the Streams API on the DynamoDB endpoint.
  const endpoint =
    process.env.AWS_ENDPOINT_URL_DYNAMODB_STREAMS ??
    process.env.AWS_ENDPOINT_URL_DYNAMODB ??
    process.env.AWS_ENDPOINT_URL;
  const streams = new DynamoDBStreamsClient(endpoint ? { endpoint } : {});
  const region = await dynamo.config.region();
  const { Table } = await dynamo.send(new DescribeTableCommand({ TableName: options.tableName }));
  const streamArn = Table?.LatestStreamArn;
  if (!streamArn)
    throw new Error(`Table ${options.tableName} has no stream: serverless.yml must give it a StreamSpecification`);
  const batchSize = options.batchSize ?? 100;
  const idleMs = options.idleMs ?? 50;
  const onError =
    options.onError ?? ((error) => process.stderr.write(`stream relay: ${(error as Error).stack ?? String(error)}\n`));

  let stopped = false;
  /** Shards being read, and the last sequence number handed over and accepted in each. */
  const shards = new Map<string, { done: boolean; last?: string; idle: boolean }>();
  const readers: Promise<void>[] = [];

  const iteratorFor = async (shardId: string, after: string | undefined, first: boolean) => {
    const input = after
      ? { ShardIteratorType: 'AFTER_SEQUENCE_NUMBER' as const, SequenceNumber: after }
      : { ShardIteratorType: (first ? (options.from ?? 'LATEST') : 'TRIM_HORIZON') as 'LATEST' | 'TRIM_HORIZON' };
    const { ShardIterator } = await streams.send(
      new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shardId, ...input }),
    );
    return ShardIterator;
  };

  const readShard = async (shardId: string, first: boolean, initial: string | undefined) => {
    const state = shards.get(shardId)!;
    let iterator = initial;
    while (!stopped && iterator) {
      let result;
      try {
        result = await streams.send(new GetRecordsCommand({ ShardIterator: iterator, Limit: batchSize }));
      } catch (error) {
        if (error instanceof ExpiredIteratorException || error instanceof TrimmedDataAccessException) {
          iterator = await iteratorFor(shardId, state.last, first);
          continue;
        }
        if (stopped) return;
        onError(error);
        await pause(500);
        continue;
      }
      const records = (result.Records ?? []).map((r) => toLambdaRecord(r, streamArn, region));
      const wanted = options.filter ? records.filter(options.filter) : records;
      if (wanted.length) {
        let response: DynamoDBBatchResponse | void;
        try {
          response = await options.consumer({ Records: wanted });
        } catch (error) {
          // A function error: Lambda retries the whole batch.
          onError(error);
          response = { batchItemFailures: [{ itemIdentifier: wanted[0]!.dynamodb!.SequenceNumber! }] };
        }
        const failed = response?.batchItemFailures?.[0]?.itemIdentifier;
        if (failed !== undefined) {
          // Read again from the failed record, after a pause (Lambda's retry).
          const index = records.findIndex((r) => r.dynamodb?.SequenceNumber === failed);
          if (index > 0) state.last = records[index - 1]!.dynamodb!.SequenceNumber;
          await pause(200);
          const again = await streams.send(
            new GetShardIteratorCommand({
              StreamArn: streamArn,
              ShardId: shardId,
              ShardIteratorType: 'AT_SEQUENCE_NUMBER',
              SequenceNumber: failed,
            }),
          );
          iterator = again.ShardIterator;
          continue;
        }
      }
      if (records.length) state.last = records.at(-1)!.dynamodb!.SequenceNumber;
      state.idle = records.length === 0;
      iterator = result.NextShardIterator;
      if (!records.length) await pause(idleMs);
    }
    state.done = true;
  };

  let firstPass = true;
  const discover = async () => {
    const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn }));
    const first = firstPass;
    const starting: Promise<void>[] = [];
    for (const shard of StreamDescription?.Shards ?? []) {
      const id = shard.ShardId!;
      if (shards.has(id)) continue;
      // A closed shard seen at start holds history only: with LATEST, nothing of it is wanted.
      if (first && (options.from ?? 'LATEST') === 'LATEST' && shard.SequenceNumberRange?.EndingSequenceNumber) continue;
      shards.set(id, { done: false, idle: false });
      // Each reader's first iterator is taken before discover() resolves: LATEST is where the stream
      // was when startStreamRelay resolved, so what is written after that is never passed over.
      starting.push(
        iteratorFor(id, undefined, first).then(
          (iterator) => void readers.push(readShard(id, first, iterator).catch(onError)),
        ),
      );
    }
    firstPass = false;
    await Promise.all(starting);
  };
  await discover();
  const discovery = (async () => {
    while (!stopped) {
      await pause(1000);
      if (!stopped) await discover().catch(onError);
    }
  })();

  return {
    async stop() {
      stopped = true;
      await Promise.all([...readers, discovery]);
      streams.destroy();
      dynamo.destroy();
    },
    async drained() {
      // Every open shard has read past the end once since the call.
      await discover();
      for (const state of shards.values()) state.idle = false;
      while (!stopped && [...shards.values()].some((s) => !s.done && !s.idle)) await pause(idleMs);
    },
  };
}

/**
 * The records the outbox consumer acts on when inserted: outbox entries and messages (a message item
 * is its own outbox entry: shared/db/messages.ts). What serverless.yml's filter criteria for the
 * outbox function say of inserts; the local relays hand over these.
 */
export const isOutboxInsert = (record: DynamoDBRecord): boolean => {
  const entity = record.dynamodb?.NewImage?.entity?.S;
  return record.eventName === 'INSERT' && (entity === 'outbox' || entity === 'message');
};
