import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { childProcess, type RunningService } from './service';

/**
 * SQS emulator (npm local-aws-sqs; both SQS protocols the SDK uses), in a child process of its own so
 * that its work does not share an event loop with the functions and workers it serves.
 */
const CHILD = join(fileURLToPath(import.meta.url), '..', 'sqs-child.mjs');

export async function startSqsLocal(options: { port: number; host?: string }): Promise<RunningService> {
  const child = spawn(process.execPath, [CHILD, String(options.port)], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
  const running = childProcess(child);
  const port = await new Promise<number>((resolve, reject) => {
    let output = '';
    child.stdout!.on('data', (chunk) => {
      output += chunk;
      const match = /listening (\d+)/.exec(output);
      if (match) resolve(Number(match[1]));
    });
    child.stderr!.on('data', (chunk) => (output += chunk));
    child.once('exit', (code) => reject(new Error(`SQS emulator exited (${code}):\n${output}`)));
  });
  return running.serving(`http://127.0.0.1:${port}`);
}
