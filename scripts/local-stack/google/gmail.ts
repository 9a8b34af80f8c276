import type { DiscoveryMethod } from './discovery';
import { GoogleApiError, invalid, notFound } from './errors';
import { bodyText, headerOf, leaves, parseMime, snippetOf, type MimeHeader, type MimeNode } from './mime';
import { compileSearch, hiddenAway, SYSTEM_LABELS } from './search';

/**
 * The state and the handlers of the local Gmail fake: mailboxes with Gmail's labels, messages parsed
 * into Gmail's MessagePart tree, threads, drafts, search (`q`) and the history log that incremental sync
 * reads. Reading a raw message is in mime.ts, parsing and matching `q` in search.ts, Google's error
 * shape in errors.ts. Names and shapes follow gmail-v1.json; the server (server.ts) checks every
 * request and answer against it, so a handler here only has to be right about behaviour.
 */

// ---------------------------------------------------------------------------------------------------
// Gmail's resources, as gmail-v1.json names them
// ---------------------------------------------------------------------------------------------------

export interface MessagePartBody {
  attachmentId?: string;
  size: number;
  data?: string;
}

export interface MessagePart {
  partId?: string;
  mimeType: string;
  filename?: string;
  headers: MimeHeader[];
  body?: MessagePartBody;
  parts?: MessagePart[];
}

export interface GmailMessage {
  id: string;
  threadId: string;
  labelIds?: string[];
  snippet?: string;
  historyId?: string;
  internalDate?: string;
  payload?: MessagePart;
  sizeEstimate?: number;
  raw?: string;
}

interface LabelColor {
  textColor?: string;
  backgroundColor?: string;
}

export interface GmailLabel {
  id: string;
  name: string;
  type: 'system' | 'user';
  messageListVisibility?: 'show' | 'hide';
  labelListVisibility?: 'labelShow' | 'labelShowIfUnread' | 'labelHide';
  color?: LabelColor;
  messagesTotal?: number;
  messagesUnread?: number;
  threadsTotal?: number;
  threadsUnread?: number;
}

type MessageFormat = 'minimal' | 'full' | 'raw' | 'metadata';

/** Gmail's base64url, padded (`-` and `_`, with `=`). */
function base64url(bytes: Buffer): string {
  return bytes.toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
}

/** Accepts either base64 alphabet, as Google does for `format: byte`. */
function fromBase64(text: string): Buffer {
  return Buffer.from(text.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

// ---------------------------------------------------------------------------------------------------
// Mailbox state
// ---------------------------------------------------------------------------------------------------

export interface StoredMessage {
  id: string;
  threadId: string;
  labelIds: string[];
  raw: Buffer;
  internalDate: number;
  historyId: number;
  mime: MimeNode;
  snippet: string;
  /** Subject without Re:/Fwd: prefixes, lower case: a reply joins a thread only when it matches. */
  subjectKey: string;
  rfcMessageId?: string;
  /** Message-IDs named by In-Reply-To and References. */
  references: string[];
  search: { from: string; to: string; cc: string; bcc: string; subject: string; all: string };
  hasAttachment: boolean;
}

type HistoryKind = 'messageAdded' | 'messageDeleted' | 'labelAdded' | 'labelRemoved';

export interface HistoryRecord {
  id: number;
  message: { id: string; threadId: string };
  /** The message's labels once the change was made. */
  labelIds: string[];
  added?: string[];
  removed?: string[];
  kind: 'messageAdded' | 'messageDeleted' | 'labels';
}

export interface Watch {
  topicName: string;
  labelIds: string[];
  labelFilterBehavior: 'include' | 'exclude';
  expiration: number;
}

/** What the clock and the ID source of one fake are (injectable, so tests can fix them). */
export interface GmailEnvironment {
  now: () => number;
  newId: () => string;
  /** Each change logged in a mailbox's history (the fake's Pub/Sub publishes it to a watched topic). */
  changed?: (mailbox: Mailbox, entry: HistoryRecord) => void;
}

export class Mailbox {
  readonly email: string;
  readonly labels = new Map<string, GmailLabel>();
  readonly messages = new Map<string, StoredMessage>();
  historyId = 1000;
  /** History before this id is gone: a startHistoryId below it is answered 404. */
  historyFloor = 1000;
  history: HistoryRecord[] = [];
  watch: Watch | undefined;
  /** Drafts: draft ID (`r-` and digits, as Gmail's) → the ID of its message, which carries the DRAFT label. */
  readonly drafts = new Map<string, string>();
  private nextLabel = 1;

  constructor(
    email: string,
    private readonly env: GmailEnvironment,
  ) {
    this.email = email;
    for (const id of SYSTEM_LABELS) {
      const hidden =
        id === 'CHAT' ? ({ messageListVisibility: 'hide', labelListVisibility: 'labelHide' } as const) : {};
      this.labels.set(id, { id, name: id, type: 'system', ...hidden });
    }
  }

  get now(): number {
    return this.env.now();
  }

  newLabelId(): string {
    return `Label_${this.nextLabel++}`;
  }

  /** A draft ID like Gmail's (`r-` and decimal digits), unique in this fake. */
  newDraftId(): string {
    return `r-${BigInt(`0x${this.env.newId()}`).toString()}`;
  }

  /** A draft and its message; 404 for an ID that names no draft (any more). */
  draft(id: string): { id: string; message: StoredMessage } {
    const messageId = this.drafts.get(id);
    const message = messageId === undefined ? undefined : this.messages.get(messageId);
    if (!message) throw notFound();
    return { id, message };
  }

  /** The draft whose message this is, if any. */
  draftIdOf(messageId: string): string | undefined {
    for (const [id, m] of this.drafts) if (m === messageId) return id;
    return undefined;
  }

  message(id: string): StoredMessage {
    if (!/^[0-9a-f]+$/.test(id)) throw invalid('Invalid id value');
    const message = this.messages.get(id);
    if (!message) throw notFound();
    return message;
  }

  threadMessages(threadId: string): StoredMessage[] {
    if (!/^[0-9a-f]+$/.test(threadId)) throw invalid('Invalid id value');
    const messages = [...this.messages.values()].filter((m) => m.threadId === threadId);
    if (!messages.length) throw notFound();
    return messages.sort((a, b) => a.internalDate - b.internalDate || a.id.localeCompare(b.id));
  }

  /** Labels must exist (by ID, not by name: a name is the classic client mistake Gmail refuses). */
  checkLabels(ids: readonly string[]): void {
    for (const id of ids) if (!this.labels.has(id)) throw invalid(`Invalid label: ${id}`);
  }

  private record(entry: Omit<HistoryRecord, 'id'>): number {
    this.historyId++;
    const logged = { id: this.historyId, ...entry };
    this.history.push(logged);
    this.env.changed?.(this, logged);
    return this.historyId;
  }

  /** Stores a parsed message and logs messageAdded. */
  add(raw: Buffer, labelIds: string[], internalDate: number, threadHint?: string): StoredMessage {
    return this.store(this.prepare(raw, labelIds, internalDate, threadHint));
  }

  /**
   * Replaces a message by a new one (a new ID, as Gmail gives an updated draft): the new one is parsed
   * and threaded while the old one is still there (a threadId hint naming the old one's thread stays
   * valid), then history logs messageDeleted of the old one and messageAdded of the new one.
   */
  replace(
    old: StoredMessage,
    raw: Buffer,
    labelIds: string[],
    internalDate: number,
    threadHint?: string,
  ): StoredMessage {
    const message = this.prepare(raw, labelIds, internalDate, threadHint);
    this.remove(old);
    return this.store(message);
  }

  /** Parses and threads a message without storing it: what fails (labels, thread hint) fails before any change. */
  private prepare(raw: Buffer, labelIds: string[], internalDate: number, threadHint?: string): StoredMessage {
    this.checkLabels(labelIds);
    const mime = parseMime(raw);
    const header = (name: string) => headerOf(mime.headers, name) ?? '';
    const subject = header('Subject');
    const text = bodyText(mime);
    const message: StoredMessage = {
      id: this.env.newId(),
      threadId: '',
      labelIds: [...new Set(labelIds)],
      raw,
      internalDate,
      historyId: 0,
      mime,
      snippet: snippetOf(text),
      subjectKey: subjectKey(subject),
      rfcMessageId: /<[^>]+>/.exec(header('Message-ID'))?.[0],
      references: `${header('In-Reply-To')} ${header('References')}`.match(/<[^>]+>/g) ?? [],
      search: {
        from: header('From'),
        to: header('To'),
        cc: header('Cc'),
        bcc: header('Bcc'),
        subject,
        all: [header('From'), header('To'), header('Cc'), header('Bcc'), subject, text].join('\n'),
      },
      hasAttachment: leaves(mime).some((n) => n.attachment),
    };
    message.threadId = this.threadFor(message, threadHint) ?? message.id;
    return message;
  }

  private store(message: StoredMessage): StoredMessage {
    this.messages.set(message.id, message);
    message.historyId = this.record({
      kind: 'messageAdded',
      message: { id: message.id, threadId: message.threadId },
      labelIds: [...message.labelIds],
    });
    return message;
  }

  /**
   * Gmail's threading: a message joins the thread of a message its In-Reply-To/References name, when
   * the subjects match once Re:/Fwd: are stripped; a `threadId` the client gives must be that thread.
   */
  private threadFor(message: StoredMessage, threadHint?: string): string | undefined {
    if (threadHint !== undefined) this.threadMessages(threadHint);
    const referenced = new Set(message.references);
    const candidates = [...this.messages.values()].filter(
      (m) => m.rfcMessageId && referenced.has(m.rfcMessageId) && m.subjectKey === message.subjectKey,
    );
    const threads = candidates.sort((a, b) => b.internalDate - a.internalDate).map((m) => m.threadId);
    return threadHint !== undefined ? threads.find((t) => t === threadHint) : threads[0];
  }

  /** Adds and removes labels; logs one history record when anything changed. */
  relabel(message: StoredMessage, add: readonly string[], remove: readonly string[]): void {
    this.checkLabels([...add, ...remove]);
    const added = [...new Set(add)].filter((l) => !message.labelIds.includes(l) && !remove.includes(l));
    const removed = [...new Set(remove)].filter((l) => message.labelIds.includes(l));
    if (!added.length && !removed.length) return;
    message.labelIds = [...message.labelIds.filter((l) => !removed.includes(l)), ...added];
    message.historyId = this.record({
      kind: 'labels',
      message: { id: message.id, threadId: message.threadId },
      labelIds: [...message.labelIds],
      ...(added.length ? { added } : {}),
      ...(removed.length ? { removed } : {}),
    });
  }

  /** Deletes a message for good; a draft whose message it is goes with it, as in Gmail. */
  remove(message: StoredMessage): void {
    this.messages.delete(message.id);
    const draftId = this.draftIdOf(message.id);
    if (draftId !== undefined) this.drafts.delete(draftId);
    // The labels it had, so that history.list's labelId still finds the deletion.
    const labelIds = [...message.labelIds];
    this.record({ kind: 'messageDeleted', message: { id: message.id, threadId: message.threadId }, labelIds });
  }

  /** Forgets the history so far: any startHistoryId before now is answered 404, as after Gmail's retention. */
  expireHistory(): void {
    this.history = [];
    this.historyFloor = this.historyId;
  }

  /** messagesTotal/Unread and threadsTotal/Unread of one label. */
  counts(labelId: string): Pick<GmailLabel, 'messagesTotal' | 'messagesUnread' | 'threadsTotal' | 'threadsUnread'> {
    const withLabel = [...this.messages.values()].filter((m) => m.labelIds.includes(labelId));
    const unread = withLabel.filter((m) => m.labelIds.includes('UNREAD'));
    return {
      messagesTotal: withLabel.length,
      messagesUnread: unread.length,
      threadsTotal: new Set(withLabel.map((m) => m.threadId)).size,
      threadsUnread: new Set(unread.map((m) => m.threadId)).size,
    };
  }
}

function subjectKey(subject: string): string {
  return subject
    .replace(/^(\s*(re|fwd?|aw|wg)\s*(\[\d+\])?\s*:)+/i, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
}

// ---------------------------------------------------------------------------------------------------
// Rendering messages and threads
// ---------------------------------------------------------------------------------------------------

function attachmentIdOf(messageId: string, partId: string): string {
  return base64url(Buffer.from(`attachment:${messageId}:${partId}`)).replace(/=+$/, '');
}

function messagePart(node: MimeNode, partId: string, messageId: string): MessagePart {
  const part: MessagePart = {
    partId,
    mimeType: node.mimeType,
    filename: node.filename,
    headers: node.headers.map((h) => ({ ...h })),
    body: { size: 0 },
  };
  if (node.parts.length)
    part.parts = node.parts.map((child, i) => messagePart(child, partId === '' ? `${i}` : `${partId}.${i}`, messageId));
  else if (node.attachment) part.body = { attachmentId: attachmentIdOf(messageId, partId), size: node.content.length };
  else if (node.content.length) part.body = { size: node.content.length, data: base64url(node.content) };
  return part;
}

function partById(node: MimeNode, partId: string, at = ''): MimeNode | undefined {
  if (at === partId) return node;
  for (const [i, child] of node.parts.entries()) {
    const found = partById(child, partId, at === '' ? `${i}` : `${at}.${i}`);
    if (found) return found;
  }
  return undefined;
}

function renderMessage(m: StoredMessage, format: MessageFormat, metadataHeaders: string[] = []): GmailMessage {
  const out: GmailMessage = {
    id: m.id,
    threadId: m.threadId,
    ...(m.labelIds.length ? { labelIds: [...m.labelIds] } : {}),
    snippet: m.snippet,
    sizeEstimate: m.raw.length,
    historyId: String(m.historyId),
    internalDate: String(m.internalDate),
  };
  switch (format) {
    case 'minimal':
      return out;
    case 'raw':
      return { ...out, raw: base64url(m.raw) };
    case 'metadata': {
      const wanted = metadataHeaders.map((h) => h.toLowerCase());
      const headers = m.mime.headers.filter((h) => !wanted.length || wanted.includes(h.name.toLowerCase()));
      return { ...out, payload: { mimeType: m.mime.mimeType, headers: headers.map((h) => ({ ...h })) } };
    }
    case 'full':
      return { ...out, payload: messagePart(m.mime, '', m.id) };
  }
}

/** What modify/trash answer: the message's identity and labels. */
const labelsOnly = (m: StoredMessage): GmailMessage => ({
  id: m.id,
  threadId: m.threadId,
  ...(m.labelIds.length ? { labelIds: [...m.labelIds] } : {}),
});

// ---------------------------------------------------------------------------------------------------
// Page tokens
// ---------------------------------------------------------------------------------------------------

interface Cursor {
  /** Sort key of the last item returned: internalDate (or history id) and id. */
  t: number;
  i: string;
}

const encodeToken = (c: Cursor) => Buffer.from(JSON.stringify(c)).toString('base64url');

function decodeToken(token: string | null): Cursor | undefined {
  if (token === null || token === '') return undefined;
  try {
    const c = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Cursor;
    if (typeof c.t === 'number' && typeof c.i === 'string') return c;
  } catch {
    // answered below
  }
  throw invalid('Invalid pageToken');
}

/** One page of items sorted newest first by (t, i). */
function page<T>(
  items: T[],
  key: (item: T) => Cursor,
  pageToken: string | null,
  maxResults: number,
): { items: T[]; next?: string } {
  const after = decodeToken(pageToken);
  const rest = after
    ? items.filter((item) => {
        const k = key(item);
        return k.t < after.t || (k.t === after.t && k.i < after.i);
      })
    : items;
  const pageItems = rest.slice(0, maxResults);
  const last = pageItems[pageItems.length - 1];
  return { items: pageItems, ...(rest.length > maxResults && last ? { next: encodeToken(key(last)) } : {}) };
}

const newestFirst = (a: Cursor, b: Cursor) => b.t - a.t || (b.i < a.i ? -1 : b.i > a.i ? 1 : 0);

// ---------------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------------

export interface GmailCall {
  mailbox: Mailbox;
  state: GmailState;
  method: DiscoveryMethod;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
}

export interface GmailAnswer {
  status: number;
  /** JSON body; undefined for an empty answer (204). */
  body?: unknown;
}

/** A query value, or the document's default for it (maxResults "100", format "full"...). */
function queryValue(call: GmailCall, name: string): string | undefined {
  return call.query.get(name) ?? call.method.parameters?.[name]?.default;
}

/** maxResults: the document's default, 0 read as unset (proto3), capped at Gmail's 500. */
function maxResultsOf(call: GmailCall): number {
  const n = Number(queryValue(call, 'maxResults'));
  return Math.min(n > 0 ? n : Number(call.method.parameters?.maxResults?.default ?? 100), 500);
}

const ok = (body: unknown): GmailAnswer => ({ status: 200, body });
const empty: GmailAnswer = { status: 204 };

type Body<T> = Partial<T> & Record<string, unknown>;
const bodyOf = <T>(call: GmailCall) => (call.body ?? {}) as Body<T>;

function rawOf(call: GmailCall): Buffer {
  return rawFrom(bodyOf<GmailMessage>(call).raw);
}

/** A Message's `raw` (base64 or base64url), required. */
function rawFrom(raw: unknown): Buffer {
  if (typeof raw !== 'string' || raw === '')
    throw invalid("'raw' RFC822 payload message string or uploading message via /upload/* URL required");
  return fromBase64(raw);
}

function dateHeader(raw: Buffer): number | undefined {
  const date = headerOf(parseMime(raw).headers, 'Date');
  const t = date ? Date.parse(date) : NaN;
  return Number.isNaN(t) ? undefined : t;
}

function listMessages(call: GmailCall): GmailAnswer {
  const { mailbox } = call;
  const search = compileSearch(mailbox, call.query.get('q') ?? '', call.query.getAll('labelIds'));
  const includeSpamTrash = queryValue(call, 'includeSpamTrash') === 'true';
  const found = [...mailbox.messages.values()]
    .filter((m) => !hiddenAway(m, search, includeSpamTrash) && search.matches(m))
    .sort((a, b) => newestFirst({ t: a.internalDate, i: a.id }, { t: b.internalDate, i: b.id }));
  const result = page(found, (m) => ({ t: m.internalDate, i: m.id }), call.query.get('pageToken'), maxResultsOf(call));
  return ok({
    ...(result.items.length ? { messages: result.items.map((m) => ({ id: m.id, threadId: m.threadId })) } : {}),
    ...(result.next ? { nextPageToken: result.next } : {}),
    resultSizeEstimate: found.length,
  });
}

function listThreads(call: GmailCall): GmailAnswer {
  const { mailbox } = call;
  const labelIds = call.query.getAll('labelIds');
  const search = compileSearch(mailbox, call.query.get('q') ?? '', []);
  const includeSpamTrash = queryValue(call, 'includeSpamTrash') === 'true';
  for (const l of labelIds) search.explicit.add(l);
  const byThread = new Map<string, StoredMessage[]>();
  for (const m of mailbox.messages.values()) {
    if (hiddenAway(m, search, includeSpamTrash)) continue;
    byThread.set(m.threadId, [...(byThread.get(m.threadId) ?? []), m]);
  }
  // A thread carries the labels of all its messages; q matches when one of its messages does.
  const found = [...byThread.entries()]
    .filter(([, ms]) => labelIds.every((l) => ms.some((m) => m.labelIds.includes(l))) && ms.some(search.matches))
    .map(([id, ms]) => {
      const latest = ms.reduce((a, b) => (b.internalDate > a.internalDate ? b : a));
      return { id, latest, historyId: Math.max(...ms.map((m) => m.historyId)) };
    })
    .sort((a, b) => newestFirst({ t: a.latest.internalDate, i: a.id }, { t: b.latest.internalDate, i: b.id }));
  const key = (t: (typeof found)[number]) => ({ t: t.latest.internalDate, i: t.id });
  const result = page(found, key, call.query.get('pageToken'), maxResultsOf(call));
  return ok({
    ...(result.items.length
      ? {
          threads: result.items.map((t) => ({ id: t.id, snippet: t.latest.snippet, historyId: String(t.historyId) })),
        }
      : {}),
    ...(result.next ? { nextPageToken: result.next } : {}),
    resultSizeEstimate: found.length,
  });
}

function renderThread(messages: StoredMessage[], format: MessageFormat, metadataHeaders: string[] = []) {
  return {
    id: messages[0]!.threadId,
    historyId: String(Math.max(...messages.map((m) => m.historyId))),
    messages: messages.map((m) => renderMessage(m, format, metadataHeaders)),
  };
}

/** What threads.modify/trash/untrash answer: the thread and its messages' labels. */
const threadLabels = (messages: StoredMessage[]) => ({
  ...renderThread(messages, 'minimal'),
  messages: messages.map(labelsOnly),
});

function modifyRequest(call: GmailCall): { add: string[]; remove: string[] } {
  const body = bodyOf<{ addLabelIds: string[]; removeLabelIds: string[] }>(call);
  return { add: body.addLabelIds ?? [], remove: body.removeLabelIds ?? [] };
}

/**
 * Trash keeps the other labels (untrash gives them back) and takes a message out of SPAM; a draft's
 * message is not trashed but deleted with its draft, as Gmail discards a draft.
 */
const trash = (mailbox: Mailbox, m: StoredMessage) =>
  mailbox.draftIdOf(m.id) !== undefined ? mailbox.remove(m) : mailbox.relabel(m, ['TRASH'], ['SPAM']);
const untrash = (mailbox: Mailbox, m: StoredMessage) => mailbox.relabel(m, [], ['TRASH']);

function labelName(mailbox: Mailbox, name: unknown, except?: string): string {
  const text = typeof name === 'string' ? name.trim() : '';
  if (!text || SYSTEM_LABELS.some((id) => id.toLowerCase() === text.toLowerCase())) throw invalid('Invalid label name');
  const taken = [...mailbox.labels.values()].some(
    (l) => l.id !== except && l.name.toLowerCase() === text.toLowerCase(),
  );
  if (taken) throw new GoogleApiError(409, 'Label name exists or conflicts', 'aborted');
  return text;
}

function userLabel(mailbox: Mailbox, id: string): GmailLabel {
  const label = mailbox.labels.get(id);
  if (!label) throw notFound();
  if (label.type === 'system') throw invalid('Invalid update request: a system label cannot be changed');
  return label;
}

/** A label as labels.list shows it (no counts) or labels.get (with counts). */
function renderLabel(mailbox: Mailbox, label: GmailLabel, withCounts: boolean): GmailLabel {
  return {
    ...label,
    ...(label.color ? { color: { ...label.color } } : {}),
    ...(withCounts ? mailbox.counts(label.id) : {}),
  };
}

/** Label fields a create/update/patch body sets. */
function labelFields(body: Body<GmailLabel>): Partial<GmailLabel> {
  const out: Partial<GmailLabel> = {};
  if (body.messageListVisibility != null) out.messageListVisibility = body.messageListVisibility;
  if (body.labelListVisibility != null) out.labelListVisibility = body.labelListVisibility;
  if (body.color != null) out.color = { ...body.color };
  return out;
}

function historyList(call: GmailCall): GmailAnswer {
  const { mailbox } = call;
  const start = call.query.get('startHistoryId');
  if (start === null) throw invalid('startHistoryId is required');
  if (Number(start) < mailbox.historyFloor) throw notFound();
  const types = new Set(call.query.getAll('historyTypes') as HistoryKind[]);
  const labelId = call.query.get('labelId');
  const want = (kind: HistoryKind) => !types.size || types.has(kind);
  const records = mailbox.history
    .filter((r) => r.id > Number(start))
    .filter(
      (r) => !labelId || r.labelIds.includes(labelId) || !!r.added?.includes(labelId) || !!r.removed?.includes(labelId),
    )
    .map((r) => {
      const message = { id: r.message.id, threadId: r.message.threadId };
      const withLabels = { ...message, ...(r.labelIds.length ? { labelIds: [...r.labelIds] } : {}) };
      const parts: Record<string, unknown> = {};
      if (r.kind === 'messageAdded' && want('messageAdded')) parts.messagesAdded = [{ message: withLabels }];
      if (r.kind === 'messageDeleted' && want('messageDeleted')) parts.messagesDeleted = [{ message }];
      if (r.added && want('labelAdded')) parts.labelsAdded = [{ message: withLabels, labelIds: [...r.added] }];
      if (r.removed && want('labelRemoved')) parts.labelsRemoved = [{ message: withLabels, labelIds: [...r.removed] }];
      return Object.keys(parts).length ? { id: String(r.id), messages: [message], ...parts } : undefined;
    })
    .filter((r) => r !== undefined);
  // Oldest first, as Gmail lists history; the cursor is the last record's id.
  const after = decodeToken(call.query.get('pageToken'));
  const rest = after ? records.filter((r) => Number(r.id) > after.t) : records;
  const max = maxResultsOf(call);
  const items = rest.slice(0, max);
  const last = items[items.length - 1];
  return ok({
    ...(items.length ? { history: items } : {}),
    ...(rest.length > max && last ? { nextPageToken: encodeToken({ t: Number(last.id), i: '' }) } : {}),
    historyId: String(mailbox.historyId),
  });
}

const WEEK_MS = 7 * 24 * 60 * 60 * 1000;

/** The handlers, by discovery method id. */
export const GMAIL_HANDLERS: Record<string, (call: GmailCall) => GmailAnswer> = {
  'gmail.users.getProfile': ({ mailbox }) =>
    ok({
      emailAddress: mailbox.email,
      messagesTotal: mailbox.messages.size,
      threadsTotal: new Set([...mailbox.messages.values()].map((m) => m.threadId)).size,
      historyId: String(mailbox.historyId),
    }),

  'gmail.users.watch': (call) => {
    const body = bodyOf<Watch & { labelFilterAction: 'include' | 'exclude' }>(call);
    if (!body.topicName || !/^projects\/[^/]+\/topics\/[^/]+$/.test(body.topicName))
      throw invalid('Invalid topicName does not match projects/SOME-PROJECT/topics/SOME-TOPIC');
    const expiration = call.mailbox.now + WEEK_MS;
    call.mailbox.watch = {
      topicName: body.topicName,
      labelIds: body.labelIds ?? [],
      labelFilterBehavior: body.labelFilterBehavior ?? body.labelFilterAction ?? 'include',
      expiration,
    };
    return ok({ historyId: String(call.mailbox.historyId), expiration: String(expiration) });
  },

  'gmail.users.stop': ({ mailbox }) => {
    mailbox.watch = undefined;
    return empty;
  },

  'gmail.users.history.list': historyList,

  // Labels

  'gmail.users.labels.list': ({ mailbox }) =>
    ok({ labels: [...mailbox.labels.values()].map((l) => renderLabel(mailbox, l, false)) }),

  'gmail.users.labels.get': ({ mailbox, params }) => {
    const label = mailbox.labels.get(params.id!);
    if (!label) throw notFound();
    return ok(renderLabel(mailbox, label, true));
  },

  'gmail.users.labels.create': (call) => {
    const { mailbox } = call;
    const body = bodyOf<GmailLabel>(call);
    const label: GmailLabel = {
      id: mailbox.newLabelId(),
      name: labelName(mailbox, body.name),
      type: 'user',
      ...labelFields(body),
    };
    mailbox.labels.set(label.id, label);
    return ok(renderLabel(mailbox, label, false));
  },

  'gmail.users.labels.patch': (call) => {
    const label = userLabel(call.mailbox, call.params.id!);
    const body = bodyOf<GmailLabel>(call);
    if (body.name === null) throw invalid('Invalid label name');
    if (body.name !== undefined) label.name = labelName(call.mailbox, body.name, label.id);
    Object.assign(label, labelFields(body));
    // A patch's null clears the field (Google's patch semantics): the label then has none.
    for (const field of ['messageListVisibility', 'labelListVisibility', 'color'] as const)
      if ((body as Record<string, unknown>)[field] === null) delete label[field];
    return ok(renderLabel(call.mailbox, label, false));
  },

  'gmail.users.labels.update': (call) => {
    const label = userLabel(call.mailbox, call.params.id!);
    const body = bodyOf<GmailLabel>(call);
    const replaced: GmailLabel = {
      id: label.id,
      name: labelName(call.mailbox, body.name, label.id),
      type: 'user',
      ...labelFields(body),
    };
    call.mailbox.labels.set(label.id, replaced);
    return ok(renderLabel(call.mailbox, replaced, false));
  },

  'gmail.users.labels.delete': ({ mailbox, params }) => {
    const label = userLabel(mailbox, params.id!);
    for (const m of mailbox.messages.values()) if (m.labelIds.includes(label.id)) mailbox.relabel(m, [], [label.id]);
    mailbox.labels.delete(label.id);
    return empty;
  },

  // Messages

  'gmail.users.messages.list': listMessages,

  'gmail.users.messages.get': (call) => {
    const message = call.mailbox.message(call.params.id!);
    const format = queryValue(call, 'format') as MessageFormat;
    return ok(renderMessage(message, format, call.query.getAll('metadataHeaders')));
  },

  'gmail.users.messages.insert': (call) => ingest(call, queryValue(call, 'internalDateSource')),
  'gmail.users.messages.import': (call) => ingest(call, queryValue(call, 'internalDateSource')),

  'gmail.users.messages.send': (call) => {
    const body = bodyOf<GmailMessage>(call);
    return ok(labelsOnly(sendMessage(call.mailbox, call.state, rawOf(call), body.threadId)));
  },

  'gmail.users.messages.modify': (call) => {
    const message = call.mailbox.message(call.params.id!);
    const { add, remove } = modifyRequest(call);
    call.mailbox.relabel(message, add, remove);
    return ok(labelsOnly(message));
  },

  'gmail.users.messages.batchModify': (call) => {
    const body = bodyOf<{ ids: string[] }>(call);
    const ids = batchIds(body.ids);
    const { add, remove } = modifyRequest(call);
    call.mailbox.checkLabels([...add, ...remove]);
    for (const id of ids) {
      const message = call.mailbox.messages.get(id);
      if (message) call.mailbox.relabel(message, add, remove);
    }
    return empty;
  },

  'gmail.users.messages.batchDelete': (call) => {
    // Gmail: "no guarantees that messages were not already deleted or even existed".
    for (const id of batchIds(bodyOf<{ ids: string[] }>(call).ids)) {
      const message = call.mailbox.messages.get(id);
      if (message) call.mailbox.remove(message);
    }
    return empty;
  },

  'gmail.users.messages.trash': ({ mailbox, params }) => {
    const message = mailbox.message(params.id!);
    // A draft's message is deleted with its draft (answered with the labels it had).
    trash(mailbox, message);
    return ok(labelsOnly(message));
  },

  'gmail.users.messages.untrash': ({ mailbox, params }) => {
    const message = mailbox.message(params.id!);
    untrash(mailbox, message);
    return ok(labelsOnly(message));
  },

  'gmail.users.messages.delete': ({ mailbox, params }) => {
    mailbox.remove(mailbox.message(params.id!));
    return empty;
  },

  'gmail.users.messages.attachments.get': ({ mailbox, params }) => {
    const message = mailbox.message(params.messageId!);
    const partId = /^attachment:[0-9a-f]+:([0-9.]*)$/.exec(Buffer.from(params.id!, 'base64url').toString('utf8'))?.[1];
    const part = partId !== undefined ? partById(message.mime, partId) : undefined;
    if (!part || !part.attachment || attachmentIdOf(message.id, partId!) !== params.id) throw notFound();
    return ok({ attachmentId: params.id, size: part.content.length, data: base64url(part.content) });
  },

  // Drafts

  'gmail.users.drafts.list': listDrafts,

  'gmail.users.drafts.get': (call) => {
    const draft = call.mailbox.draft(call.params.id!);
    return ok({ id: draft.id, message: renderMessage(draft.message, queryValue(call, 'format') as MessageFormat) });
  },

  'gmail.users.drafts.create': (call) => {
    const { mailbox } = call;
    const message = draftMessage(call);
    const stored = mailbox.add(rawFrom(message.raw), ['DRAFT'], mailbox.now, message.threadId);
    const id = mailbox.newDraftId();
    mailbox.drafts.set(id, stored.id);
    return ok({ id, message: labelsOnly(stored) });
  },

  'gmail.users.drafts.update': (call) => {
    const { mailbox } = call;
    const draft = mailbox.draft(call.params.id!);
    const body = bodyOf<DraftBody>(call);
    if (body.id !== undefined && body.id !== draft.id) throw invalid('Draft id in the body does not match the URL');
    const message = draftMessage(call);
    // The draft keeps its ID; its message is a new one (new ID), as Gmail does on every update.
    const stored = mailbox.replace(draft.message, rawFrom(message.raw), ['DRAFT'], mailbox.now, message.threadId);
    mailbox.drafts.set(draft.id, stored.id);
    return ok({ id: draft.id, message: labelsOnly(stored) });
  },

  'gmail.users.drafts.delete': ({ mailbox, params }) => {
    mailbox.remove(mailbox.draft(params.id!).message);
    return empty;
  },

  'gmail.users.drafts.send': (call) => {
    const { mailbox } = call;
    const body = bodyOf<DraftBody>(call);
    const draft = mailbox.draft(body.id ?? '');
    // A message in the body replaces the draft's content before it goes.
    const raw = body.message?.raw !== undefined ? rawFrom(body.message.raw) : draft.message.raw;
    const sent = sendMessage(mailbox, call.state, raw, body.message?.threadId ?? draft.message.threadId);
    mailbox.remove(draft.message);
    return ok(labelsOnly(sent));
  },

  // Threads

  'gmail.users.threads.list': listThreads,

  'gmail.users.threads.get': (call) => {
    const messages = call.mailbox.threadMessages(call.params.id!);
    const format = queryValue(call, 'format') as MessageFormat;
    return ok(renderThread(messages, format, call.query.getAll('metadataHeaders')));
  },

  'gmail.users.threads.modify': (call) => {
    const messages = call.mailbox.threadMessages(call.params.id!);
    const { add, remove } = modifyRequest(call);
    call.mailbox.checkLabels([...add, ...remove]);
    for (const m of messages) call.mailbox.relabel(m, add, remove);
    return ok(threadLabels(messages));
  },

  'gmail.users.threads.trash': ({ mailbox, params }) => {
    const messages = mailbox.threadMessages(params.id!);
    for (const m of messages) trash(mailbox, m);
    // Drafts' messages are deleted, not trashed: the answer names the messages still there.
    const left = messages.filter((m) => mailbox.messages.has(m.id));
    return ok(left.length ? threadLabels(left) : { id: params.id!, historyId: String(mailbox.historyId) });
  },

  'gmail.users.threads.untrash': ({ mailbox, params }) => {
    const messages = mailbox.threadMessages(params.id!);
    for (const m of messages) untrash(mailbox, m);
    return ok(threadLabels(messages));
  },

  'gmail.users.threads.delete': ({ mailbox, params }) => {
    for (const m of mailbox.threadMessages(params.id!)) mailbox.remove(m);
    return empty;
  },
};

interface DraftBody {
  id: string;
  message: Partial<GmailMessage>;
}

/** The message of a drafts.create/update body, which must be there. */
function draftMessage(call: GmailCall): Partial<GmailMessage> {
  const message = bodyOf<DraftBody>(call).message;
  if (!message || typeof message !== 'object') throw invalid('Missing draft message');
  return message;
}

/** drafts.list: the drafts whose message matches `q`, newest first, paged like messages.list. */
function listDrafts(call: GmailCall): GmailAnswer {
  const { mailbox } = call;
  const search = compileSearch(mailbox, call.query.get('q') ?? '', []);
  const includeSpamTrash = queryValue(call, 'includeSpamTrash') === 'true';
  const found = [...mailbox.drafts.entries()]
    .flatMap(([id, messageId]) => {
      const message = mailbox.messages.get(messageId);
      return message && !hiddenAway(message, search, includeSpamTrash) && search.matches(message)
        ? [{ id, message }]
        : [];
    })
    .sort((a, b) => newestFirst({ t: a.message.internalDate, i: a.id }, { t: b.message.internalDate, i: b.id }));
  const key = (d: (typeof found)[number]) => ({ t: d.message.internalDate, i: d.id });
  const result = page(found, key, call.query.get('pageToken'), maxResultsOf(call));
  return ok({
    ...(result.items.length
      ? { drafts: result.items.map((d) => ({ id: d.id, message: { id: d.message.id, threadId: d.message.threadId } })) }
      : {}),
    ...(result.next ? { nextPageToken: result.next } : {}),
    resultSizeEstimate: found.length,
  });
}

/**
 * Sends a message as messages.send and drafts.send do: From, Date and Message-ID completed, SENT
 * (and INBOX, UNREAD when it is addressed to the user too), delivered to the other users of this fake.
 */
function sendMessage(mailbox: Mailbox, state: GmailState, rawIn: Buffer, threadHint?: string): StoredMessage {
  const raw = completeForSending(rawIn, mailbox.email, mailbox.now, state.env.newId());
  const headers = parseMime(raw).headers;
  const recipients = ['To', 'Cc', 'Bcc'].flatMap((h) => addresses(headerOf(headers, h) ?? ''));
  if (!recipients.length) throw invalid('Recipient address required');
  const toSelf = recipients.some((r) => r === mailbox.email.toLowerCase());
  const sent = mailbox.add(raw, toSelf ? ['SENT', 'INBOX', 'UNREAD'] : ['SENT'], mailbox.now, threadHint);
  // Other users of this fake receive it, without the Bcc header, as SMTP would deliver it.
  const delivered = withoutHeader(raw, 'Bcc');
  for (const address of new Set(recipients)) {
    const other = state.mailboxOf(address);
    if (other && other !== mailbox) other.add(delivered, ['INBOX', 'UNREAD'], other.now);
  }
  return sent;
}

function batchIds(ids: string[] | undefined): string[] {
  if (!ids?.length) throw invalid('ids must not be empty');
  if (ids.length > 1000) throw invalid('Too many ids: at most 1000');
  for (const id of ids) if (!/^[0-9a-f]+$/.test(id)) throw invalid('Invalid id value');
  return ids;
}

function ingest(call: GmailCall, internalDateSource: string | undefined): GmailAnswer {
  const { mailbox } = call;
  const body = bodyOf<GmailMessage>(call);
  const raw = rawOf(call);
  const labelIds = [...(body.labelIds ?? [])];
  // Gmail labels an inserted message SENT when its From is the user (the guide on labels says so).
  const from = addresses(headerOf(parseMime(raw).headers, 'From') ?? '');
  if (from.includes(mailbox.email.toLowerCase()) && !labelIds.includes('SENT')) labelIds.push('SENT');
  const internalDate = (internalDateSource === 'dateHeader' && dateHeader(raw)) || mailbox.now;
  if (queryValue(call, 'deleted') === 'true') {
    // Workspace's "deleted" messages are visible only in Vault: created, answered, never listed.
    mailbox.checkLabels(labelIds);
    const id = call.state.env.newId();
    return ok({ id, threadId: id, ...(labelIds.length ? { labelIds } : {}) });
  }
  return ok(labelsOnly(mailbox.add(raw, labelIds, internalDate, body.threadId)));
}

/** Lower-case addresses in an address-list header. */
function addresses(header: string): string[] {
  return (header.match(/[^\s<>,;:"()]+@[^\s<>,;:"()]+/g) ?? []).map((a) => a.toLowerCase());
}

function withoutHeader(raw: Buffer, name: string): Buffer {
  const text = raw.toString('latin1');
  const end = /\r?\n\r?\n/.exec(text);
  const head = end ? text.slice(0, end.index) : text;
  const kept = head.replace(new RegExp(`^${name}:.*(\\r?\\n[ \\t].*)*(\\r?\\n|$)`, 'gim'), '');
  return Buffer.from(kept.replace(/\r?\n$/, '') + (end ? text.slice(end.index) : ''), 'latin1');
}

/** What Gmail adds to a message it sends when the client left it out: From, Date, Message-ID. */
function completeForSending(raw: Buffer, email: string, now: number, id: string): Buffer {
  const headers = parseMime(raw).headers;
  const missing: string[] = [];
  if (!headerOf(headers, 'From')) missing.push(`From: ${email}`);
  if (!headerOf(headers, 'Date')) missing.push(`Date: ${new Date(now).toUTCString().replace('GMT', '+0000')}`);
  if (!headerOf(headers, 'Message-ID')) missing.push(`Message-ID: <${id}@mail.gmail.com>`);
  return missing.length ? Buffer.concat([Buffer.from(missing.join('\r\n') + '\r\n'), raw]) : raw;
}

// ---------------------------------------------------------------------------------------------------
// All mailboxes of one fake
// ---------------------------------------------------------------------------------------------------

export class GmailState {
  private readonly mailboxes = new Map<string, Mailbox>();
  private readonly tokens = new Map<string, Mailbox>();
  readonly env: GmailEnvironment;

  constructor(env: GmailEnvironment) {
    this.env = env;
  }

  addUser(user: { email: string; accessToken: string }): void {
    const email = user.email.toLowerCase();
    let mailbox = this.mailboxes.get(email);
    if (!mailbox) this.mailboxes.set(email, (mailbox = new Mailbox(user.email, this.env)));
    this.tokens.set(user.accessToken, mailbox);
  }

  mailboxOf(email: string): Mailbox | undefined {
    return this.mailboxes.get(email.toLowerCase());
  }

  byToken(token: string): Mailbox | undefined {
    return this.tokens.get(token);
  }

  /** The mailbox of a test-only helper's `email`, or a plain error naming it. */
  required(email: string): Mailbox {
    const mailbox = this.mailboxOf(email);
    if (!mailbox) throw new Error(`The Google fake has no user ${email}; addUser first`);
    return mailbox;
  }

  /** Mail arriving from outside: INBOX and UNREAD unless other labels are given; logged as messageAdded. */
  deliver(
    email: string,
    raw: Buffer | string,
    labelIds: string[] = ['INBOX', 'UNREAD'],
  ): { id: string; threadId: string } {
    const mailbox = this.required(email);
    const message = mailbox.add(typeof raw === 'string' ? Buffer.from(raw) : raw, labelIds, mailbox.now);
    return { id: message.id, threadId: message.threadId };
  }

  reset(): void {
    this.mailboxes.clear();
    this.tokens.clear();
  }
}

/** Message IDs like Gmail's: 16 lower-case hex digits that grow with time. */
export function gmailIds(now: () => number): () => string {
  let counter = 0;
  return () => ((BigInt(now()) << 20n) | BigInt(counter++ & 0xfffff)).toString(16).padStart(16, '0').slice(-16);
}
