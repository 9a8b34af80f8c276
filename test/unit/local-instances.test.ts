import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  chooseInstance,
  instanceFile,
  recordInstance,
  runningInstances,
  type Instance,
} from '../../scripts/local-stack/instances';

/** One record per `npm start` instance, so two of them in one checkout never overwrite or delete each other's. */
const instance = (port: number, pid = process.pid): Instance => ({
  port,
  pid,
  env: { TABLE_NAME: `switchboard-local-${port}` },
});

describe('Function: runningInstances', () => {
  it('keeps one file per instance, and lists the live ones by port', () => {
    const dir = mkdtempSync(join(tmpdir(), 'instances-'));
    recordInstance(dir, instance(3100));
    recordInstance(dir, instance(3000));
    expect(runningInstances(dir).map((i) => i.port)).toEqual([3000, 3100]);
    expect(runningInstances(dir)[0]!.env.TABLE_NAME).toBe('switchboard-local-3000');
  });

  it('removes the file of an instance whose process is gone, and ignores files that are not records', () => {
    const dir = mkdtempSync(join(tmpdir(), 'instances-'));
    recordInstance(dir, instance(3000, 111));
    recordInstance(dir, instance(3200, 222));
    writeFileSync(join(dir, 'local-env.3300.json'), '{ half written');
    writeFileSync(join(dir, 'notes.txt'), 'x');
    expect(runningInstances(dir, (pid) => pid === 222).map((i) => i.port)).toEqual([3200]);
    expect(existsSync(instanceFile(dir, 3000))).toBe(false);
    expect(existsSync(join(dir, 'local-env.3300.json'))).toBe(true);
  });

  it('finds nothing in a folder that does not exist', () => {
    expect(runningInstances(join(tmpdir(), 'no-such-folder-here'))).toEqual([]);
  });
});

describe('Function: chooseInstance', () => {
  const two = [instance(3000), instance(3100)];

  it('takes the only running instance', () => {
    expect(chooseInstance([instance(3000)])).toEqual({ instance: instance(3000) });
  });

  it('takes the one on the given port, and says which run when that port has none', () => {
    expect(chooseInstance(two, 3100)).toEqual({ instance: instance(3100) });
    expect(chooseInstance(two, 3200)).toEqual({ error: 'no npm start is running on port 3200 (running: 3000, 3100)' });
  });

  it('refuses to guess between several, and says how to start one when none runs', () => {
    expect(chooseInstance(two)).toEqual({
      error: 'several npm start instances are running (ports 3000, 3100): choose one with --port PORT',
    });
    expect(chooseInstance([])).toEqual({
      error: 'TABLE_NAME is not set and no local stack is running (start one with `npm start`).',
    });
  });
});
