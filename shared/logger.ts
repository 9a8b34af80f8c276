import { env } from '#shared/config';

/**
 * Structured JSON logger (one line per entry, as CloudWatch expects). Callers pass explicit fields;
 * nothing logs request bodies or headers wholesale, and keys that look secret are masked anyway.
 */
const LEVELS = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 } as const;
type Level = Exclude<keyof typeof LEVELS, 'silent'>;

const SECRET_KEY = /authorization|api_?key|secret|password|token|cookie/i;
const threshold = LEVELS[env.logLevel() as keyof typeof LEVELS] ?? LEVELS.info;

function sanitize(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (SECRET_KEY.test(key)) out[key] = '[redacted]';
    else if (value instanceof Error) out[key] = { name: value.name, message: value.message, stack: value.stack };
    else out[key] = value;
  }
  return out;
}

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

function make(base: Record<string, unknown>): Logger {
  const write = (level: Level, message: string, fields: Record<string, unknown> = {}) => {
    if (LEVELS[level] < threshold) return;
    const line = JSON.stringify({ level, time: new Date().toISOString(), message, ...base, ...sanitize(fields) });
    if (level === 'error' || level === 'warn') process.stderr.write(line + '\n');
    else process.stdout.write(line + '\n');
  };
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => make({ ...base, ...sanitize(fields) }),
  };
}

export const logger: Logger = make({ service: 'switchboard' });
