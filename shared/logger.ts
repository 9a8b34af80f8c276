import { AsyncLocalStorage } from 'node:async_hooks';
import { Logger as PowertoolsLogger, LogFormatter, LogItem } from '@aws-lambda-powertools/logger';
import type { LogAttributes, UnformattedAttributes } from '@aws-lambda-powertools/logger/types';
import { env } from '#shared/config';

/**
 * Structured JSON logs through Powertools for AWS Lambda's Logger: one line per entry, as CloudWatch
 * expects, `{"level":"info","time":…,"message":…,"service":"switchboard",…}` (our formatter keeps
 * the shape the logs had before Powertools, lower-case level first). Every line written while a
 * request is served carries that request's keys (`request_id`, and `application_id` / `grant_id`
 * once known: runWithLogKeys / addLogKeys), whichever logger writes it, and concurrent requests in
 * one process (tests, `npm start`) keep theirs apart. Debug lines are sampled per request when
 * `POWERTOOLS_LOGGER_SAMPLE_RATE` is set (resampleLogs, called as each request begins). Callers pass
 * explicit fields; nothing logs request bodies or headers wholesale, and keys that look secret are
 * masked anyway.
 */
const SECRET_KEY = /authorization|api_?key|secret|password|token|cookie/i;

function sanitize(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (SECRET_KEY.test(key)) out[key] = '[redacted]';
    else if (value instanceof Error) out[key] = { name: value.name, message: value.message, stack: value.stack };
    else out[key] = value;
  }
  return out;
}

/** The keys of the request being served, for every line written in its async context. */
const requestKeys = new AsyncLocalStorage<Record<string, unknown>>();

/** Runs `serve` with its own log keys (a request's): lines written inside carry them. */
export const runWithLogKeys = <T>(keys: Record<string, unknown>, serve: () => T): T =>
  requestKeys.run({ ...keys }, serve);

/** Adds keys to the current request's (a no-op outside one). */
export function addLogKeys(keys: Record<string, unknown>): void {
  const current = requestKeys.getStore();
  if (current) for (const [key, value] of Object.entries(keys)) if (value !== undefined) current[key] = value;
}

/** Our line shape: level, time, message, service, then Lambda's context, the request's keys and the entry's fields. */
class SwitchboardFormatter extends LogFormatter {
  formatAttributes(attributes: UnformattedAttributes, additional: LogAttributes): LogItem {
    const lambda = attributes.lambdaContext;
    return new LogItem({
      attributes: {
        level: attributes.logLevel.toLowerCase(),
        time: attributes.timestamp.toISOString(),
        message: attributes.message,
        service: attributes.serviceName,
        ...(lambda ? { function_name: lambda.functionName, cold_start: lambda.coldStart } : {}),
        ...(attributes.xRayTraceId ? { xray_trace_id: attributes.xRayTraceId } : {}),
        ...requestKeys.getStore(),
      },
    }).addAttributes(additional);
  }
}

const LEVELS = { debug: 'DEBUG', info: 'INFO', warn: 'WARN', error: 'ERROR', silent: 'SILENT' } as const;

const root = new PowertoolsLogger({
  serviceName: process.env.POWERTOOLS_SERVICE_NAME || 'switchboard',
  logLevel: LEVELS[env.logLevel() as keyof typeof LEVELS] ?? 'INFO',
  logFormatter: new SwitchboardFormatter(),
});

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

function make(base: Record<string, unknown>): Logger {
  const write = (level: 'debug' | 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown> = {}) =>
    root[level](message, { ...base, ...sanitize(fields) });
  return {
    debug: (m, f) => write('debug', m, f),
    info: (m, f) => write('info', m, f),
    warn: (m, f) => write('warn', m, f),
    error: (m, f) => write('error', m, f),
    child: (fields) => make({ ...base, ...sanitize(fields) }),
  };
}

export const logger: Logger = make({});

/** Decides again whether this request's debug lines are written (POWERTOOLS_LOGGER_SAMPLE_RATE). */
export const resampleLogs = (): void => root.refreshSampleRateCalculation();
