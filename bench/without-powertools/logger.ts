/**
 * The foundation bench's "without Powertools" build (bench/foundation.ts): what shared/logger.ts
 * uses of @aws-lambda-powertools/logger, done as the logger did before Powertools (a JSON line per
 * entry written to stdout or stderr, levels filtered, nothing else), so that the bundles built with
 * it measure what Powertools' Logger costs a cold start. Never part of a deployed bundle.
 */
const RANK: Record<string, number> = { DEBUG: 8, INFO: 12, WARN: 16, ERROR: 20, SILENT: 28 };

export class LogItem {
  private attributes: Record<string, unknown>;
  constructor(params: { attributes: Record<string, unknown> }) {
    this.attributes = { ...params.attributes };
  }
  addAttributes(attributes: Record<string, unknown>): this {
    Object.assign(this.attributes, attributes);
    return this;
  }
  getAttributes(): Record<string, unknown> {
    return this.attributes;
  }
}

export abstract class LogFormatter {
  abstract formatAttributes(attributes: unknown, additional: Record<string, unknown>): LogItem;
}

export class Logger {
  private readonly threshold: number;
  private readonly serviceName: string;
  private readonly formatter: LogFormatter;
  constructor(options: { serviceName: string; logLevel: string; logFormatter: LogFormatter }) {
    this.threshold = RANK[options.logLevel] ?? RANK.INFO!;
    this.serviceName = options.serviceName;
    this.formatter = options.logFormatter;
  }
  private write(level: string, message: string, extra: Record<string, unknown>): void {
    if (RANK[level]! < this.threshold) return;
    const item = this.formatter.formatAttributes(
      { logLevel: level, timestamp: new Date(), message, serviceName: this.serviceName },
      extra,
    );
    const line = `${JSON.stringify(item.getAttributes())}\n`;
    if (level === 'WARN' || level === 'ERROR') process.stderr.write(line);
    else process.stdout.write(line);
  }
  debug(message: string, extra: Record<string, unknown> = {}): void {
    this.write('DEBUG', message, extra);
  }
  info(message: string, extra: Record<string, unknown> = {}): void {
    this.write('INFO', message, extra);
  }
  warn(message: string, extra: Record<string, unknown> = {}): void {
    this.write('WARN', message, extra);
  }
  error(message: string, extra: Record<string, unknown> = {}): void {
    this.write('ERROR', message, extra);
  }
  refreshSampleRateCalculation(): void {}
}
