import type { ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import type { AddressInfo, Server as NetServer } from 'node:net';

/**
 * What the local emulators and servers share: each is a RunningService (its endpoint, and a stop
 * that waits until it is gone), served either by an HTTP server in this process (`listen`,
 * `httpService`) or by a child process (`childProcess`).
 */
export interface RunningService {
  endpoint: string;
  stop(): Promise<void>;
}

/** Listens on `port` (0: any free one) of `host`; resolves with the port once listening, rejects if it cannot. */
export function listen(server: NetServer, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** The base URL of a server on `host` (an IPv6 address in brackets). */
export const httpEndpoint = (host: string, port: number) => `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

/** An HTTP server as a service: listening on `port` of `host`; stop closes its connections too. `beforeStop` runs first. */
export async function httpService(
  server: Server,
  port: number,
  host: string,
  beforeStop: () => void = () => undefined,
): Promise<RunningService> {
  const listening = await listen(server, port, host);
  return {
    endpoint: httpEndpoint(host, listening),
    stop: () =>
      new Promise<void>((resolve) => {
        beforeStop();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A child process serving an emulator: killed with this process should that exit first (a child
 * left behind would keep its port and hang the next run), from the moment it is spawned; `serving`
 * makes it the service at `endpoint` once that answers, and `stop` (also for a child that never
 * got there) asks it to end (SIGTERM), then kills it after `graceMs` (3 s unless told).
 */
export function childProcess(
  child: ChildProcess,
  graceMs?: number,
): { stop(): Promise<void>; serving(endpoint: string): RunningService } {
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = () => {
    process.removeListener('exit', killOnExit);
    return stopChild(child, graceMs);
  };
  return { stop, serving: (endpoint) => ({ endpoint, stop }) };
}

/** Ends a child process: SIGTERM, then SIGKILL after `graceMs` (3 s); resolves once it is gone (at once if it is already). */
export function stopChild(child: ChildProcess, graceMs = 3000): Promise<void> {
  return new Promise((resolve) => {
    // Gone already (a signal to the whole process group, say): 'exit' will not come again.
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    timer.unref();
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
