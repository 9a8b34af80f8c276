import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { setPriority } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { digest } from './cache';
import { alive } from './instances';
import { childProcess, type RunningService } from './service';
import { readZipEntry, rewriteZip } from './zip';

/**
 * Amazon DynamoDB Local, the jar shipped inside the npm package amplify-dynamodb-simulator, run
 * in memory by the JVM, listening on loopback only (LoopbackDynamoDbLocal.java beside this file: the
 * jar alone would listen on every interface), with its telemetry off (it would otherwise call out to
 * AWS) and no CORS allow-list (browsers' pages cannot read from it). Needs a JDK 17+, whose source
 * launcher runs that file (`apt-get install -y openjdk-17-jdk-headless`).
 *
 * Its start is mostly the JVM loading, verifying and compiling some 4,000 classes. JVM_OPTIONS make
 * that cheaper on every start. With a cache folder (scripts/local-stack/cache.ts) it is cheaper still
 * from the second start on, by an AppCDS archive: classes mapped from a file, loaded and verified
 * already. On 2 cores: 4.5 s of CPU to the first answer from the source launcher; with the archive
 * and the launcher compiled, every emulator is up in about 1.7 s (`npm run bench -- start`).
 *   - The first start runs from a copy of the emulator's jar whose manifest no longer says
 *     `Class-Path: .` (the JVM archives nothing from a class path that names a non-empty folder; the
 *     libraries are on the command line, in a fixed order), and on its way out
 *     (-XX:ArchiveClassesAtExit, a few seconds after Ctrl-C) the JVM writes the archive.
 *   - While it stops, javac compiles the launcher into a jar of its own, put last on the class path of
 *     later starts (an archive holds for its class path and any longer one).
 * One process at a time makes what is missing (a lock file holds its process ID; a dead one's is
 * taken over), each file under a temporary name renamed into place when whole. A JVM given an
 * archive whose jars have changed ignores it: slower, never wrong; the folder is named by a digest of
 * the JDK, the jars and the launcher, so that this rarely happens.
 */
const require = createRequire(import.meta.url);

/**
 * The serial collector (no collector threads to start) and no performance-data file in /tmp. Not
 * C1 alone (-XX:TieredStopAtLevel=1): it saved 0.1 to 0.3 s of npm start, and cost every request
 * after it, tests and benchmarks included (`npm run bench -- mailbox`: searches about 2.5 ms slower
 * at p50, ~12.5 ms instead of ~10 ms).
 */
const JVM_OPTIONS = ['-XX:+UseSerialGC', '-XX:-UsePerfData', '-Xms64m'];
/** What a cache folder holds and how it is used (changing it makes folders anew). */
const CACHE_LAYOUT = 'DynamoDBLocal.jar without Class-Path, launcher.jar last on the class path, classes.jsa';
/** How long a JVM writing its archive on the way out may take before it is killed. */
const ARCHIVE_STOP_MS = 15_000;

export function javaAvailable(): boolean {
  return spawnSync('java', ['-version'], { stdio: 'ignore' }).status === 0;
}

/** Whether `java` can run a source file (a JDK, not a bare JRE: the jdk.compiler module is there). */
function sourceLauncherAvailable(): boolean {
  const modules = spawnSync('java', ['--list-modules'], { encoding: 'utf8' });
  return modules.status === 0 && /^jdk\.compiler@/m.test(modules.stdout);
}

const LAUNCHER = join(dirname(fileURLToPath(import.meta.url)), 'LoopbackDynamoDbLocal.java');
const MAIN_CLASS = 'LoopbackDynamoDbLocal';
const emulatorDir = () => join(dirname(require.resolve('amplify-dynamodb-simulator/package.json')), 'emulator');
const emulatorJar = () => join(emulatorDir(), 'DynamoDBLocal.jar');
const libraryDir = () => join(emulatorDir(), 'DynamoDBLocal_lib');
/** The emulator's libraries in a fixed order (an archive holds for the class path it was made with). */
const libraries = () =>
  readdirSync(libraryDir())
    .filter((name) => name.endsWith('.jar'))
    .sort()
    .map((name) => join(libraryDir(), name));

/** The `java` that PATH names, by its real path (the JDK it belongs to). */
function javaBinary(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    try {
      const candidate = join(dir, 'java');
      if (statSync(candidate).isFile()) return realpathSync(candidate);
    } catch {
      /* not there */
    }
  }
  return undefined;
}

/** This JDK's and emulator's folder in `cacheDir`, named by a digest of the launcher, the JDK and the emulator's jars. */
function cacheFolder(cacheDir: string, java: string): string {
  const home = dirname(dirname(java));
  const stamp = (file: string) => {
    try {
      const { size, mtimeMs } = statSync(file);
      return `${file} ${size} ${mtimeMs}`;
    } catch {
      return `${file} -`;
    }
  };
  const files = [java, join(home, 'release'), join(home, 'lib', 'server', 'libjvm.so'), emulatorJar(), ...libraries()];
  return join(cacheDir, 'dynamodb-local', digest(CACHE_LAYOUT, readFileSync(LAUNCHER), files.map(stamp).join('\n')));
}

export async function startDynamoDbLocal(options: {
  port: number;
  host?: string;
  cacheDir?: string;
}): Promise<RunningService> {
  const host = options.host ?? '127.0.0.1';
  const java = javaBinary();
  const folder = java && options.cacheDir ? cacheFolder(options.cacheDir, java) : undefined;
  // Without the launcher compiled, the JVM runs its source.
  if (!java || (!(folder && existsSync(join(folder, 'launcher.jar'))) && !sourceLauncherAvailable())) {
    throw new Error(
      'DynamoDB Local needs a JDK 17 or newer on PATH (Debian: apt-get install -y openjdk-17-jdk-headless)',
    );
  }
  const plan = folder ? cachedStart(java, folder) : undefined;
  const launch = plan?.args ?? ['-cp', `${emulatorJar()}:${join(libraryDir(), '*')}`, LAUNCHER];
  const child = spawnEmulator(java, [`-Dswitchboard.host=${host}`, ...launch], options.port);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
    child.once('error', () => resolve({ code: null, signal: null }));
  });
  const running = childProcess(child, plan?.archiving ? ARCHIVE_STOP_MS : undefined);
  // The cache's part of stopping: what the JVM leaves, and the launcher compiled meanwhile.
  let stopped: Promise<void> | undefined;
  const stop = () => (stopped ??= Promise.all([running.stop(), plan?.finish(exited)]).then(() => undefined));

  const endpoint = `http://${host}:${options.port}`;
  // Loaded while the JVM starts.
  const { DynamoDBClient, ListTablesCommand } = await import('@aws-sdk/client-dynamodb');
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`DynamoDB Local exited with code ${child.exitCode ?? child.signalCode}:\n${output}`);
      try {
        await client.send(new ListTablesCommand({}));
        break;
      } catch {
        if (Date.now() > deadline)
          throw new Error(`DynamoDB Local did not start within 60 s on port ${options.port}:\n${output}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  } catch (error) {
    await stop();
    throw error;
  } finally {
    client.destroy();
  }
  return { endpoint, stop };
}

function spawnEmulator(java: string, args: string[], port: number): ChildProcess {
  return spawn(
    java,
    [
      `-Djava.library.path=${libraryDir()}`,
      ...JVM_OPTIONS,
      ...args,
      '-inMemory',
      '-sharedDb',
      '-disableTelemetry',
      '-port',
      String(port),
    ],
    {
      cwd: emulatorDir(),
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
}

interface CachedStart {
  /** The JVM's arguments after the options: archive options, class path, main class or source file. */
  args: string[];
  /** Whether this JVM writes the archive on its way out (its stop then waits longer). */
  archiving: boolean;
  /** Runs while the JVM stops: compiles the launcher if it is this process's to make, keeps or drops the archive, releases the folder. */
  finish(exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>): Promise<void>;
}

/**
 * How this start uses the cache folder (see the top of this file), or undefined: the source launcher
 * on the emulator's own jar, as without a cache (the first start of a folder another live process is
 * making).
 */
function cachedStart(java: string, folder: string): CachedStart | undefined {
  const jar = join(folder, 'DynamoDBLocal.jar');
  const launcherJar = join(folder, 'launcher.jar');
  const archive = join(folder, 'classes.jsa');
  const classPath = [jar, ...libraries()];
  const compiled = existsSync(launcherJar);
  /** The main class from the launcher's jar, last on the class path, or the launcher's source. */
  const main = () =>
    existsSync(launcherJar)
      ? ['-cp', [...classPath, launcherJar].join(':'), MAIN_CLASS]
      : ['-cp', classPath.join(':'), LAUNCHER];
  const quiet = ['-Xlog:cds=off', '-Xlog:cds+dynamic=off'];
  const done = async () => undefined;
  if (existsSync(archive) && compiled)
    return {
      args: ['-Xshare:auto', `-XX:SharedArchiveFile=${archive}`, ...quiet, ...main()],
      archiving: false,
      finish: done,
    };

  const lockFile = `${folder}.lock`;
  const locked = lock(lockFile);
  if (existsSync(archive)) {
    const args = ['-Xshare:auto', `-XX:SharedArchiveFile=${archive}`, ...quiet, ...main()];
    if (!locked) return { args, archiving: false, finish: done };
    return {
      args,
      archiving: false,
      async finish() {
        await compileLauncher(java, folder).catch(() => undefined);
        rmSync(lockFile, { force: true });
      },
    };
  }
  if (!locked) return undefined;
  try {
    removeOtherFolders(dirname(folder), folder);
    mkdirSync(folder, { recursive: true });
    for (const name of readdirSync(folder)) if (name.includes('.tmp-')) rmSync(join(folder, name), { force: true });
    if (!existsSync(jar)) writeEmulatorJar(jar);
  } catch {
    rmSync(folder, { recursive: true, force: true });
    rmSync(lockFile, { force: true });
    return undefined;
  }
  const making = join(folder, `classes.jsa.tmp-${process.pid}`);
  return {
    args: [`-XX:ArchiveClassesAtExit=${making}`, ...quiet, ...main()],
    archiving: true,
    async finish(exited) {
      const [{ code, signal }] = await Promise.all([exited, compileLauncher(java, folder).catch(() => undefined)]);
      // A JVM that ended on its own terms (SIGTERM, SIGINT: exit codes 143, 130) wrote a whole archive.
      try {
        if (signal === null && code !== null && [0, 130, 143].includes(code) && statSync(making).size > 0)
          renameSync(making, archive);
      } catch {
        /* none: the next start makes it */
      }
      rmSync(making, { force: true });
      rmSync(lockFile, { force: true });
    },
  };
}

/** Writes the emulator's jar to `path` with no manifest class path (its libraries are given on the command line, in order). */
function writeEmulatorJar(path: string): void {
  const manifest =
    readZipEntry(emulatorJar(), 'META-INF/MANIFEST.MF')?.toString('utf8') ?? 'Manifest-Version: 1.0\r\n\r\n';
  const made = `${path}.tmp-${process.pid}`;
  // The attribute and its continuation lines (they start with a space).
  rewriteZip(emulatorJar(), made, {
    'META-INF/MANIFEST.MF': Buffer.from(manifest.replace(/^Class-Path:.*\r?\n(?: .*\r?\n)*/m, '')),
  });
  renameSync(made, path);
}

/** Compiles the launcher into `folder/launcher.jar` (javac at the lowest priority), unless it is there. */
async function compileLauncher(java: string, folder: string): Promise<void> {
  const launcherJar = join(folder, 'launcher.jar');
  if (existsSync(launcherJar)) return;
  const classes = join(folder, `classes.tmp-${process.pid}`);
  rmSync(classes, { recursive: true, force: true });
  try {
    await new Promise<void>((resolve, reject) => {
      const javac = spawn(
        join(dirname(java), 'javac'),
        [
          ...JVM_OPTIONS.map((option) => `-J${option}`),
          '-d',
          classes,
          '-cp',
          `${emulatorJar()}:${join(libraryDir(), '*')}`,
          LAUNCHER,
        ],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      try {
        if (javac.pid) setPriority(javac.pid, 19);
      } catch {
        /* not allowed here: normal priority */
      }
      let errors = '';
      javac.stderr!.on('data', (chunk) => (errors += chunk));
      javac.once('error', reject);
      javac.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`javac: exit ${code}\n${errors}`))));
    });
    const made = `${launcherJar}.tmp-${process.pid}`;
    rewriteZip(
      undefined,
      made,
      Object.fromEntries(readdirSync(classes).map((name) => [name, readFileSync(join(classes, name))])),
    );
    renameSync(made, launcherJar);
  } finally {
    rmSync(classes, { recursive: true, force: true });
  }
}

/** Takes the lock file `path` for this process: false when a live process holds it. */
function lock(path: string): boolean {
  try {
    mkdirSync(dirname(path), { recursive: true });
  } catch {
    return false;
  }
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx' });
      return true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return false;
      let holder = NaN;
      try {
        holder = Number(readFileSync(path, 'utf8'));
      } catch {
        /* removed meanwhile */
      }
      if (Number.isInteger(holder) && holder > 0 && alive(holder)) return false;
      rmSync(path, { force: true });
    }
  }
  return false;
}

/** Removes the folders of other JDKs or emulator versions in `dir`, except those a live process holds. */
function removeOtherFolders(dir: string, keep: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (path === keep || name.endsWith('.lock')) continue;
    let holder = 0;
    try {
      holder = Number(readFileSync(`${path}.lock`, 'utf8'));
    } catch {
      /* no lock */
    }
    if (holder > 0 && alive(holder)) continue;
    rmSync(path, { recursive: true, force: true });
    rmSync(`${path}.lock`, { force: true });
  }
}
