import { spawn } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

/**
 * Runs a README's shell blocks as a script: every ```sh (or ```bash) block, in order, in one `bash`
 * process with `set -euo pipefail`, as a reader pasting them one after the other into one terminal.
 *
 * - A block is skipped only when the line before its fence says so, with a reason:
 *   `<!-- readme-test: skip — needs AWS credentials -->`.
 * - Every HTTP answer must be 2xx unless the command announces it in a comment, `# → 409`
 *   (anywhere on the command's lines); an announced status must then really be answered.
 *   Statuses are seen through a `curl` put first on PATH that runs the real curl with `-w`, so
 *   the blocks stay plain curl: the shim writes the method, status and URL of each transfer to a
 *   log, with the README line bash was running (a DEBUG trap exports it).
 * - The script keeps the README's line numbers (every other line is blank), so `$LINENO` is the
 *   README line and a failure names the block and the command.
 */

export interface ShellBlock {
  /** 1-based place among the README's shell blocks, skipped ones included. */
  index: number;
  /** README line (1-based) of the block's first line of code. */
  line: number;
  lines: string[];
  /** Why the block is not run, from its skip marker; undefined when it runs. */
  skip?: string;
}

/** One command of a block: the README lines it spans and the HTTP statuses it announces. */
export interface Statement {
  block: ShellBlock;
  start: number;
  end: number;
  text: string;
  announced: number[];
}

export interface Transfer {
  /** The README line bash was running. */
  line: number;
  method: string;
  status: number;
  url: string;
  /** The start of the answer's body when its status is not 2xx, for the failure message. */
  body: string;
}

export interface ReadmeRun {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  transfers: Transfer[];
  /** Each failure in full (block, command, what went wrong, output tail); empty when the README ran clean. */
  failures: string[];
}

const FENCE_OPEN = /^```(?:sh|bash|shell)\s*$/;
const FENCE_CLOSE = /^```\s*$/;
const SKIP = /^<!--\s*readme-test:\s*skip\b\s*(?:[—–:-]\s*)?(.*?)\s*-->\s*$/;
const ANNOUNCED = /(?:→|->)\s*([1-5]\d\d)\b/g;
const OUTPUT_TAIL_LINES = 40;

/** The shell blocks of a Markdown text, in order, with their skip markers. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split('\n');
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    if (!FENCE_OPEN.test(lines[i]!)) continue;
    let previous = i - 1;
    while (previous >= 0 && lines[previous]!.trim() === '') previous--;
    const marker = previous >= 0 ? SKIP.exec(lines[previous]!.trim()) : null;
    if (marker && !marker[1])
      throw new Error(`README line ${previous + 1}: a readme-test skip marker must say why the block is skipped`);
    const start = i + 1;
    let end = start;
    while (end < lines.length && !FENCE_CLOSE.test(lines[end]!)) end++;
    if (end === lines.length) throw new Error(`README line ${i + 1}: shell block without a closing fence`);
    blocks.push({
      index: blocks.length + 1,
      line: start + 1,
      lines: lines.slice(start, end),
      ...(marker ? { skip: marker[1] } : {}),
    });
    i = end;
  }
  return blocks;
}

/**
 * Splits a block into commands. A command goes on while a quote, a `$(…)`, a `(…)` or a here-document
 * is open, or while a line ends with `\`, `|`, `&&` or `||`. Announcements are read from comments.
 */
export function statements(block: ShellBlock): Statement[] {
  const found: Statement[] = [];
  /** Open contexts, innermost last: a command substitution or parenthesis, a double or a single quote. */
  const open: ('(' | '"' | "'")[] = [];
  let heredoc: { delimiter: string; strip: boolean } | undefined;
  let pendingHeredoc: typeof heredoc;
  let current: { start: number; lines: string[]; announced: number[] } | undefined;
  block.lines.forEach((text, offset) => {
    const line = block.line + offset;
    if (!current) {
      if (text.trim() === '') return;
      current = { start: line, lines: [], announced: [] };
    }
    current.lines.push(text);
    if (heredoc) {
      if ((heredoc.strip ? text.replace(/^\t+/, '') : text) === heredoc.delimiter) heredoc = undefined;
    } else {
      let code = '';
      for (let i = 0; i < text.length; i++) {
        const c = text[i]!;
        const top = open[open.length - 1];
        if (top === "'") {
          if (c === "'") open.pop();
        } else if (c === '\\') {
          code += c + (text[i + 1] ?? '');
          i++;
          continue;
        } else if (top === '"') {
          if (c === '"') open.pop();
          else if (c === '$' && text[i + 1] === '(') {
            // `$(` opens one substitution: its `(` is taken here, not again as a parenthesis.
            open.push('(');
            code += '$(';
            i++;
            continue;
          }
        } else if (c === "'" || c === '"' || c === '(') open.push(c);
        else if (c === ')') open.pop();
        else if (c === '<' && text[i + 1] === '<' && text[i + 2] !== '<') {
          const here = /^<<(-?)\s*(['"]?)([A-Za-z_][A-Za-z0-9_]*)\2/.exec(text.slice(i));
          if (here) {
            pendingHeredoc = { delimiter: here[3]!, strip: here[1] === '-' };
            code += here[0];
            i += here[0].length - 1;
            continue;
          }
        } else if (c === '#' && (i === 0 || /[\s;]/.test(text[i - 1]!))) {
          for (const match of text.slice(i).matchAll(ANNOUNCED)) current.announced.push(Number(match[1]));
          break;
        }
        code += c;
      }
      if (pendingHeredoc) {
        heredoc = pendingHeredoc;
        pendingHeredoc = undefined;
        return;
      }
      if (open.length > 0 || /(?:\\|\||&&)\s*$/.test(code)) return;
    }
    if (heredoc || open.length > 0) return;
    found.push({
      block,
      start: current.start,
      end: line,
      text: current.lines.join('\n'),
      announced: current.announced,
    });
    current = undefined;
  });
  if (current)
    found.push({
      block,
      start: current.start,
      end: block.line + block.lines.length - 1,
      text: current.lines.join('\n'),
      announced: current.announced,
    });
  return found;
}

/** The script: the runnable blocks at their README lines, every other line blank, the harness on line 1. */
export function readmeScript(markdown: string): string {
  const lines = markdown.split('\n').map(() => '');
  for (const block of shellBlocks(markdown)) {
    if (block.skip) continue;
    if (block.line === 1) throw new Error('README line 1 must not be code: the harness goes there');
    block.lines.forEach((text, offset) => (lines[block.line - 1 + offset] = text));
  }
  lines[0] = [
    'set -euo pipefail',
    // Functions and subshells inherit the trap; inside a function the caller's line is kept.
    'set -T',
    `trap 'if [[ -z \${FUNCNAME[0]:-} ]]; then export READMETEST_LINE=$LINENO; printf "%s\\n" "$LINENO" > "$READMETEST_LINE_FILE"; fi' DEBUG`,
  ].join('; ');
  return lines.join('\n');
}

function findOnPath(name: string, path: string): string {
  for (const dir of path.split(delimiter)) {
    if (!dir) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      /* not here */
    }
  }
  throw new Error(`${name} is not on PATH`);
}

/**
 * A `curl` that runs the real one with `-w` to stderr and moves the marked line to the log. Its
 * output passes through unchanged (a copy is kept to quote the body of an answer outside 2xx).
 */
function curlShim(realCurl: string): string {
  return `#!/usr/bin/env bash
# The README test's curl: the real curl, plus one log line per transfer (README line, method, status, URL, body if not 2xx).
err=$(mktemp)
out=$(mktemp)
${JSON.stringify(realCurl)} "$@" -w '%{stderr}@@readme-curl@@\\t%{method}\\t%{response_code}\\t%{url_effective}\\n' 2>"$err" | tee "$out"
rc=\${PIPESTATUS[0]}
while IFS= read -r line || [[ -n $line ]]; do
  case $line in
    *@@readme-curl@@*)
      before=\${line%%@@readme-curl@@*}
      if [[ -n $before ]]; then printf '%s\\n' "$before" >&2; fi
      entry=\${line#*@@readme-curl@@}
      body=
      if [[ $entry != *$'\\t'2[0-9][0-9]$'\\t'* ]]; then body=$(head -c 400 "$out" | tr '\\t\\r\\n' '   '); fi
      printf '%s%s\\t%s\\n' "\${READMETEST_LINE:-0}" "$entry" "$body" >> "$READMETEST_CURL_LOG" ;;
    *) printf '%s\\n' "$line" >&2 ;;
  esac
done < "$err"
rm -f "$err" "$out"
exit $rc
`;
}

function parseTransfers(log: string): Transfer[] {
  return log
    .split('\n')
    .filter(Boolean)
    .map((row) => {
      const [line = '0', method = '', status = '0', url = '', body = ''] = row.split('\t');
      return { line: Number(line), method, status: Number(status), url, body: body.trim() };
    });
}

function tail(output: string): string {
  const lines = output.trimEnd().split('\n');
  return lines.slice(-OUTPUT_TAIL_LINES).join('\n');
}

function describeAt(statement: Statement | undefined, line: number): string {
  if (!statement) return `README line ${line} (outside any runnable block)`;
  const { block } = statement;
  return `block ${block.index} (README line ${block.line}), command at README line ${statement.start}:\n${statement.text}`;
}

/**
 * Runs every runnable shell block of `markdown` in one bash, in `cwd` with `env`, and judges the
 * run: the exit status, each HTTP answer against what the README announces.
 */
export async function runReadme(
  markdown: string,
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<ReadmeRun> {
  const blocks = shellBlocks(markdown).filter((b) => !b.skip);
  const all = blocks.flatMap(statements);
  const at = (line: number) => all.find((s) => s.start <= line && line <= s.end);

  const dir = mkdtempSync(join(tmpdir(), 'readme-run-'));
  try {
    const path = options.env.PATH ?? '';
    const shimDir = join(dir, 'bin');
    const scriptFile = join(dir, 'readme.sh');
    const curlLog = join(dir, 'curl.log');
    const lineFile = join(dir, 'line');
    mkdirSync(shimDir);
    writeFileSync(join(shimDir, 'curl'), curlShim(findOnPath('curl', path)), { mode: 0o755 });
    writeFileSync(curlLog, '');
    writeFileSync(scriptFile, readmeScript(markdown));

    const child = spawn('bash', [scriptFile], {
      cwd: options.cwd,
      // Its own process group: whatever the blocks leave running in the background is stopped with it.
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...options.env,
        PATH: `${shimDir}${delimiter}${path}`,
        READMETEST_CURL_LOG: curlLog,
        READMETEST_LINE_FILE: lineFile,
      },
    });
    let output = '';
    child.stdout!.on('data', (chunk) => (output += chunk));
    child.stderr!.on('data', (chunk) => (output += chunk));
    const [exitCode, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve, reject) => {
      child.once('error', reject);
      child.once('exit', (code, sig) => resolve([code, sig]));
    });
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      /* nothing left running */
    }

    const transfers = parseTransfers(readFileSync(curlLog, 'utf8'));
    const failures: string[] = [];
    const fail = (what: string, statement: Statement | undefined, line: number) =>
      failures.push(
        `${what}\nat ${describeAt(statement, line)}\n--- output (last ${OUTPUT_TAIL_LINES} lines) ---\n${tail(output)}`,
      );

    if (exitCode !== 0) {
      let line = 0;
      try {
        line = Number(readFileSync(lineFile, 'utf8').trim());
      } catch {
        /* no command ran */
      }
      fail(
        signal
          ? `the README's shell blocks were stopped by ${signal}`
          : `the README's shell blocks exited with status ${exitCode}`,
        at(line),
        line,
      );
    }
    for (const transfer of transfers) {
      if (!/^https?:/i.test(transfer.url) || transfer.status === 0 || (transfer.status >= 200 && transfer.status < 300))
        continue;
      const statement = at(transfer.line);
      if (!statement?.announced.includes(transfer.status)) {
        fail(
          `HTTP ${transfer.status} to ${transfer.method} ${transfer.url}, which the README does not announce (announce an expected status with "# → ${transfer.status}" on the command)\nanswer: ${transfer.body}`,
          statement,
          transfer.line,
        );
      }
    }
    for (const statement of all) {
      for (const status of statement.announced) {
        const answered = transfers.filter((t) => t.line >= statement.start && t.line <= statement.end);
        const ran = exitCode === 0 || answered.length > 0;
        if (ran && !answered.some((t) => t.status === status)) {
          fail(
            `the README announces HTTP ${status}, but the command was answered ${answered.map((t) => t.status).join(', ') || 'nothing'}`,
            statement,
            statement.start,
          );
        }
      }
    }
    return { exitCode, signal, output, transfers, failures };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
