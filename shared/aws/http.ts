import { NodeHttpHandler } from '@smithy/node-http-handler';

/**
 * The one HTTP handler of every AWS SDK client in a container (DynamoDB, SQS, S3, SES): one
 * keep-alive agent pool (sockets are per endpoint, so services do not queue behind each other), and
 * one handler built at cold start instead of one per client (measured ~2 ms of init per extra client).
 * Never destroy it from a client: the others use it too.
 *
 * Timeouts: without them a request whose connection stalls (no answer, no close) waits forever,
 * that is until the function's own timeout, 29 s, with the work done before it committed and the
 * answer lost (seen locally under load: a send answered "Lambda timeout" after its message was
 * stored). A connection must open within CONNECT_MS, and a request that receives nothing for
 * IDLE_MS fails with a TimeoutError, which the SDK retries like any transient error (DynamoDB
 * transactions carry an idempotency token; SQS receivers take messages at least once anyway).
 */
const CONNECT_MS = 3_000;
const IDLE_MS = 8_000;

export const requestHandler = new NodeHttpHandler({ connectionTimeout: CONNECT_MS, requestTimeout: IDLE_MS });
