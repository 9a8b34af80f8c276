import { NodeHttpHandler } from '@smithy/node-http-handler';

/**
 * The one HTTP handler of every AWS SDK client in a container (DynamoDB, SQS, S3, SES): one
 * keep-alive agent pool (sockets are per endpoint, so services do not queue behind each other), and
 * one handler built at cold start instead of one per client (measured ~2 ms of init per extra client).
 * Never destroy it from a client: the others use it too.
 */
export const requestHandler = new NodeHttpHandler();
