// Runs the SQS emulator (local-aws-sqs) in a process of its own, so its work never competes with the
// functions' event loop. Prints the port it listens on, then serves until killed.
import { createSqsServer } from 'local-aws-sqs';

const port = Number(process.argv[2] ?? 0);
const server = await createSqsServer({ port, hostname: '127.0.0.1', emulateQueueCreationLifecycle: false });
process.stdout.write(`listening ${server.address().port}\n`);
process.on('SIGTERM', () => server.close(() => process.exit(0)));
// A terminal's Ctrl-C reaches the whole process group: the parent stops this emulator after the
// functions and workers that use it (SIGTERM above), or it exits when the parent is gone (below).
process.on('SIGINT', () => undefined);
process.on('disconnect', () => process.exit(0));
