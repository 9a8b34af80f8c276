import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { childProcess, type RunningService } from './service';

/**
 * Amazon DynamoDB Local, the jar shipped inside the npm package amplify-dynamodb-simulator, run
 * in memory by the JVM, listening on loopback only (LoopbackDynamoDbLocal.java beside this file: the
 * jar alone would listen on every interface), with its telemetry off (it would otherwise call out to
 * AWS) and no CORS allow-list (browsers' pages cannot read from it). Needs a JDK 17+, whose source
 * launcher runs that file (`apt-get install -y openjdk-17-jdk-headless`).
 */
const require = createRequire(import.meta.url);

export function javaAvailable(): boolean {
  return spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0;
}

/** Whether `java` can run a source file (a JDK, not a bare JRE: the jdk.compiler module is there). */
function sourceLauncherAvailable(): boolean {
  const modules = spawnSync('java', ['--list-modules'], { encoding: 'utf8' });
  return modules.status === 0 && /^jdk\.compiler@/m.test(modules.stdout);
}

const LAUNCHER = join(dirname(fileURLToPath(import.meta.url)), 'LoopbackDynamoDbLocal.java');

export async function startDynamoDbLocal(options: { port: number; host?: string }): Promise<RunningService> {
  if (!javaAvailable() || !sourceLauncherAvailable()) {
    throw new Error('DynamoDB Local needs a JDK 17 or newer on PATH (Debian: apt-get install -y openjdk-17-jdk-headless)');
  }
  const host = options.host ?? '127.0.0.1';
  const dir = join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator');
  const child = spawn(
    'java',
    [
      `-Djava.library.path=${join(dir, 'DynamoDBLocal_lib')}`,
      `-Dswitchboard.host=${host}`,
      '-Xms64m',
      '-cp',
      `${join(dir, 'DynamoDBLocal.jar')}:${join(dir, 'DynamoDBLocal_lib', '*')}`,
      LAUNCHER,
      '-inMemory',
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      String(options.port),
    ],
    { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const running = childProcess(child);

  const endpoint = `http://${host}:${options.port}`;
  const client = new DynamoDBClient({ endpoint, region: 'us-east-1', credentials: { accessKeyId: 'local', secretAccessKey: 'local' } });
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`DynamoDB Local exited with code ${child.exitCode}:\n${output}`);
    try {
      await client.send(new ListTablesCommand({}));
      break;
    } catch {
      if (Date.now() > deadline) {
        await running.stop();
        throw new Error(`DynamoDB Local did not start within 60 s on port ${options.port}:\n${output}`);
      }
      await new Promise((r) => setTimeout(r, 150));
    }
  }
  client.destroy();
  return running.serving(endpoint);
}
