import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { badRequest, GraphError, invalidRequest, itemNotFound, UnsupportedByFakeError } from './errors';
import { headerOf, leaves, parseMime, type MimeNode } from '../google/mime';
import { buildMime } from './mime';
import type { GraphChecker, GraphOperation } from './openapi';
import { compileFilter, compileOrderBy, compileSearch, type Fields, type SearchText } from './query';
import { exchangeId } from './ids';

/**
 * The state and the handlers of the local Graph fake's mail: mailboxes with Outlook's well-known
 * folders, messages (received, drafts, sent), file attachments, the change log that messages/delta
 * reads, upload sessions of large attachments, and each operation's handler keyed by the description's
 * operationId. The server (server.ts)
 * checks every request and answer against the descriptions (openapi.ts), so a handler here only has to
 * be right about behaviour; query options are evaluated in query.ts, the MIME form built in mime.ts.
 */

// ---------------------------------------------------------------------------------------------------
// Stored resources
// ---------------------------------------------------------------------------------------------------

export interface EmailAddress {
  name?: string;
  address: string;
}

export interface Recipient {
  emailAddress: EmailAddress;
}

export interface StoredAttachment {
  id: string;
  name: string;
  contentType: string;
  bytes: Buffer;
  isInline: boolean;
  contentId?: string;
  lastModified: number;
}

export interface MessageHeader {
  name: string;
  value: string;
}

export type FlagStatus = 'notFlagged' | 'complete' | 'flagged';
type Importance = 'low' | 'normal' | 'high';

export interface StoredMessage {
  id: string;
  folderId: string;
  conversationId: string;
  internetMessageId: string;
  subject: string;
  body: { contentType: 'text' | 'html'; content: string };
  from?: Recipient;
  to: Recipient[];
  cc: Recipient[];
  bcc: Recipient[];
  replyTo: Recipient[];
  received: number;
  sent?: number;
  created: number;
  modified: number;
  isRead: boolean;
  isDraft: boolean;
  importance: Importance;
  flagStatus: FlagStatus;
  categories: string[];
  attachments: StoredAttachment[];
  /**
   * `internetMessageHeaders` (answered only when `$select` names it): a received message's headers, those
   * of a message sent or created as MIME, a reply draft's threading headers, a JSON message's `x-` headers.
   */
  headers: MessageHeader[];
  changeKey: string;
  /** The mailbox's change sequence when this message last changed: what delta reads. */
  seq: number;
}

export interface MailFolder {
  id: string;
  displayName: string;
  parentId: string;
  wellKnown?: string;
  isHidden: boolean;
}

export interface GraphUser {
  id: string;
  mail: string;
  userPrincipalName: string;
  displayName: string;
  accessToken: string;
}

/** A message gone from a folder (deleted, or moved out and so given a new ID elsewhere). */
interface Tombstone {
  id: string;
  folderId: string;
  seq: number;
}

/** What a `$skiptoken` (the rest of a round) or a `$deltatoken` (changes after a point) stands for. */
type DeltaCursor =
  | {
      kind: 'page';
      folderId: string;
      removed: string[];
      ids: string[];
      endSeq: number;
      select?: string[];
      filter?: string;
    }
  | { kind: 'delta'; folderId: string; sinceSeq: number; select?: string[]; filter?: string };

/** Outlook's well-known folder names, as `mailFolders/{name}` takes them, and their display names. */
export const WELL_KNOWN_FOLDERS = {
  inbox: 'Inbox',
  drafts: 'Drafts',
  sentitems: 'Sent Items',
  deleteditems: 'Deleted Items',
  junkemail: 'Junk Email',
  archive: 'Archive',
  outbox: 'Outbox',
} as const;

const ROOT = 'msgfolderroot';

/** An Exchange-looking ID (`AAMkAD…=`): base64url, so it is safe in a path as it is. */

export interface MailEnvironment {
  now: () => number;
}

export class Mailbox {
  readonly user: GraphUser;
  readonly folders = new Map<string, MailFolder>();
  readonly messages = new Map<string, StoredMessage>();
  seq = 0;
  tombstones: Tombstone[] = [];
  cursors = new Map<string, DeltaCursor>();
  private readonly rootId: string;

  constructor(
    user: GraphUser,
    private readonly env: MailEnvironment,
  ) {
    this.user = user;
    this.rootId = exchangeId('AAEIAAA=');
    this.folders.set(this.rootId, {
      id: this.rootId,
      displayName: 'Top of Information Store',
      parentId: exchangeId('AAEBAAA='),
      wellKnown: ROOT,
      isHidden: false,
    });
    for (const [wellKnown, displayName] of Object.entries(WELL_KNOWN_FOLDERS)) {
      const id = exchangeId('AAEMAAA=');
      this.folders.set(id, { id, displayName, parentId: this.rootId, wellKnown, isHidden: false });
    }
  }

  get now(): number {
    return this.env.now();
  }

  get root(): MailFolder {
    return this.folders.get(this.rootId)!;
  }

  /** A folder by ID or well-known name (`inbox`, any case); 404 when there is none. */
  folder(idOrName: string): MailFolder {
    const byId = this.folders.get(idOrName);
    if (byId) return byId;
    const name = idOrName.toLowerCase();
    for (const f of this.folders.values()) if (f.wellKnown === name) return f;
    throw itemNotFound();
  }

  children(parent: MailFolder): MailFolder[] {
    return [...this.folders.values()].filter((f) => f.parentId === parent.id);
  }

  /** A message by ID; through a folder's path it must be in that folder. */
  message(id: string, folderIdOrName?: string): StoredMessage {
    const message = this.messages.get(id);
    if (!message) throw itemNotFound();
    if (folderIdOrName !== undefined && this.folder(folderIdOrName).id !== message.folderId) throw itemNotFound();
    return message;
  }

  /** Marks a message changed: a new change key and sequence, so delta reports it. */
  touch(message: StoredMessage): void {
    message.seq = ++this.seq;
    message.modified = this.now;
    message.changeKey = randomBytes(12).toString('base64');
  }

  add(fields: Omit<StoredMessage, 'id' | 'seq' | 'changeKey' | 'modified'>): StoredMessage {
    const message: StoredMessage = {
      ...fields,
      id: exchangeId('AAA='),
      seq: 0,
      changeKey: '',
      modified: fields.created,
      attachments: fields.attachments.map((a) => ({ ...a, id: exchangeId('BEgAQ=') })),
    };
    this.touch(message);
    this.messages.set(message.id, message);
    return message;
  }

  remove(message: StoredMessage): void {
    this.messages.delete(message.id);
    this.tombstones.push({ id: message.id, folderId: message.folderId, seq: ++this.seq });
  }

  /**
   * Moves a message as Exchange does: a new item in the destination, the old one gone from its folder;
   * with immutable IDs (`Prefer: IdType="ImmutableId"`) the item keeps its ID, else it gets a new one.
   */
  move(message: StoredMessage, destination: MailFolder, keepId = false): StoredMessage {
    this.remove(message);
    const { id: _id, seq: _seq, changeKey: _key, modified: _modified, ...fields } = message;
    const moved = this.add({ ...fields, folderId: destination.id });
    if (!keepId) return moved;
    this.messages.delete(moved.id);
    moved.id = message.id;
    this.messages.set(moved.id, moved);
    return moved;
  }

  copy(message: StoredMessage, destination: MailFolder): StoredMessage {
    const { id: _id, seq: _seq, changeKey: _key, modified: _modified, ...fields } = message;
    return this.add({ ...fields, folderId: destination.id, categories: [...fields.categories], created: this.now });
  }

  deleteFolder(folder: MailFolder): void {
    for (const child of this.children(folder)) this.deleteFolder(child);
    for (const m of [...this.messages.values()]) if (m.folderId === folder.id) this.remove(m);
    this.folders.delete(folder.id);
  }

  /** Forgets every delta and skip token so far: using one answers 410. */
  expireDelta(): void {
    this.cursors.clear();
  }

  newCursor(cursor: DeltaCursor): string {
    const token = `GwcB${randomBytes(18).toString('base64url')}`;
    this.cursors.set(token, cursor);
    return token;
  }
}

// ---------------------------------------------------------------------------------------------------
// The state of all mailboxes
// ---------------------------------------------------------------------------------------------------

export interface Delivery {
  from: string | EmailAddress;
  to: string | EmailAddress | (string | EmailAddress)[];
  cc?: string | EmailAddress | (string | EmailAddress)[];
  subject: string;
  text?: string;
  html?: string;
  attachments?: {
    name: string;
    contentType?: string;
    content: Buffer | string;
    isInline?: boolean;
    contentId?: string;
  }[];
  /** A folder ID or well-known name; `inbox` by default. */
  folder?: string;
  /** Epoch ms; the fake's clock by default. */
  receivedAt?: number;
  isRead?: boolean;
  categories?: string[];
  importance?: Importance;
  /** Joins the conversation of an earlier message (its conversationId). */
  conversationId?: string;
}

/** Another client's change to a message, so that delta has something to report. */
export type OutsideChange =
  | { kind: 'read'; id: string; isRead?: boolean }
  | { kind: 'flag'; id: string; flagStatus: FlagStatus }
  | { kind: 'categorize'; id: string; categories: string[] }
  | { kind: 'move'; id: string; folder: string; immutableId?: boolean }
  | { kind: 'delete'; id: string };

const asAddresses = (value: undefined | string | EmailAddress | (string | EmailAddress)[]): Recipient[] =>
  (value === undefined ? [] : Array.isArray(value) ? value : [value]).map((v) => ({
    emailAddress: typeof v === 'string' ? { address: v } : { ...v },
  }));

/**
 * An upload session of a large file attachment (`createUploadSession`): the bytes come by PUTs of
 * byte ranges to its upload URL, in order; the last one adds the attachment to its message.
 */
export interface UploadSession {
  id: string;
  /** The URL's own credential: Outlook's upload URLs carry theirs and take no Authorization header. */
  authToken: string;
  mailbox: Mailbox;
  messageId: string;
  name: string;
  contentType: string;
  size: number;
  isInline: boolean;
  contentId?: string;
  chunks: Buffer[];
  received: number;
  expires: number;
}

/** Bounds of an upload session (Graph's documented ones, and the smallest size it takes, as measured by its users). */
export const UPLOAD_LIMITS = {
  /** Smaller attachments are POSTed: ErrorAttachmentSizeShouldNotBeLessThanMinimumSize. */
  minSize: 2 * 1024 * 1024,
  maxSize: 150 * 1024 * 1024,
  /** Every PUT but the last carries a multiple of 320 KiB. */
  chunkUnit: 320 * 1024,
  maxChunk: 60 * 1024 * 1024,
  lifetimeMs: 6 * 3600_000,
} as const;

export class GraphState {
  readonly mailboxes = new Map<string, Mailbox>();
  readonly uploads = new Map<string, UploadSession>();

  constructor(private readonly env: MailEnvironment) {}

  addUser(user: { email: string; accessToken: string; id?: string; displayName?: string }): GraphUser {
    const graphUser: GraphUser = {
      id: user.id ?? randomUUID(),
      mail: user.email,
      userPrincipalName: user.email,
      displayName: user.displayName ?? user.email.split('@')[0]!,
      accessToken: user.accessToken,
    };
    this.mailboxes.set(user.email.toLowerCase(), new Mailbox(graphUser, this.env));
    return graphUser;
  }

  byToken(token: string): Mailbox | undefined {
    for (const m of this.mailboxes.values()) if (m.user.accessToken === token) return m;
    return undefined;
  }

  /** A mailbox by its user's ID, mail or userPrincipalName (any case). */
  byUser(idOrName: string): Mailbox | undefined {
    const key = idOrName.toLowerCase();
    for (const m of this.mailboxes.values())
      if ([m.user.id, m.user.mail, m.user.userPrincipalName].some((v) => v.toLowerCase() === key)) return m;
    return undefined;
  }

  required(email: string): Mailbox {
    const mailbox = this.mailboxes.get(email.toLowerCase());
    if (!mailbox) throw new Error(`the Graph fake has no user ${email}`);
    return mailbox;
  }

  deliver(email: string, d: Delivery): { id: string; conversationId: string; internetMessageId: string } {
    const mailbox = this.required(email);
    const received = d.receivedAt ?? this.env.now();
    const from = asAddresses(d.from)[0]!;
    const internetMessageId = `<${randomUUID()}@${from.emailAddress.address.split('@')[1] ?? 'example.test'}>`;
    const to = asAddresses(d.to);
    const cc = asAddresses(d.cc);
    const shown = (rs: Recipient[]) =>
      rs.map((r) =>
        r.emailAddress.name ? `${r.emailAddress.name} <${r.emailAddress.address}>` : r.emailAddress.address,
      );
    const message = mailbox.add({
      folderId: mailbox.folder(d.folder ?? 'inbox').id,
      conversationId: d.conversationId ?? exchangeId('AAQ='),
      internetMessageId,
      subject: d.subject,
      body:
        d.html !== undefined
          ? { contentType: 'html', content: d.html }
          : { contentType: 'text', content: d.text ?? '' },
      from,
      to,
      cc,
      bcc: [],
      replyTo: [],
      // What a received message's internet headers hold at least.
      headers: [
        { name: 'From', value: shown([from])[0]! },
        { name: 'To', value: shown(to).join(', ') },
        ...(cc.length ? [{ name: 'Cc', value: shown(cc).join(', ') }] : []),
        { name: 'Subject', value: d.subject },
        { name: 'Date', value: new Date(received).toUTCString().replace('GMT', '+0000') },
        { name: 'Message-ID', value: internetMessageId },
        { name: 'MIME-Version', value: '1.0' },
      ],
      received,
      sent: received,
      created: received,
      isRead: d.isRead ?? false,
      isDraft: false,
      importance: d.importance ?? 'normal',
      flagStatus: 'notFlagged',
      categories: d.categories ?? [],
      attachments: (d.attachments ?? []).map((a) => ({
        id: '',
        name: a.name,
        contentType: a.contentType ?? 'application/octet-stream',
        bytes: Buffer.from(a.content),
        isInline: a.isInline ?? false,
        ...(a.contentId ? { contentId: a.contentId } : {}),
        lastModified: received,
      })),
    });
    return { id: message.id, conversationId: message.conversationId, internetMessageId: message.internetMessageId };
  }

  changeOutside(email: string, change: OutsideChange): { id: string } | undefined {
    const mailbox = this.required(email);
    const message = mailbox.message(change.id);
    switch (change.kind) {
      case 'read':
        message.isRead = change.isRead ?? true;
        break;
      case 'flag':
        message.flagStatus = change.flagStatus;
        break;
      case 'categorize':
        message.categories = [...change.categories];
        break;
      case 'move':
        return { id: mailbox.move(message, mailbox.folder(change.folder), change.immutableId === true).id };
      case 'delete':
        mailbox.remove(message);
        return undefined;
    }
    mailbox.touch(message);
    return { id: message.id };
  }

  /** A sent message's copy in the inbox of each recipient the fake hosts. */
  deliverLocally(message: StoredMessage): void {
    const recipients = [...message.to, ...message.cc, ...message.bcc].map((r) => r.emailAddress.address.toLowerCase());
    for (const address of new Set(recipients)) {
      const mailbox = this.byUser(address);
      if (!mailbox) continue;
      const { id: _id, seq: _seq, changeKey: _key, modified: _modified, ...fields } = message;
      mailbox.add({
        ...fields,
        folderId: mailbox.folder('inbox').id,
        bcc: [],
        isRead: false,
        isDraft: false,
        flagStatus: 'notFlagged',
        categories: [],
        created: this.env.now(),
      });
    }
  }

  reset(): void {
    this.mailboxes.clear();
    this.uploads.clear();
  }

  /**
   * A PUT (or a DELETE, which cancels) on an upload session's URL, checked as Outlook checks it: the
   * URL's token and no Authorization header, `Content-Range: bytes start-end/size` starting where the
   * session expects, a length that matches, chunks of a multiple of 320 KiB (the last apart) and at
   * most 60 MiB, before the session expires. A middle chunk answers 200 with the next expected range;
   * the last adds the attachment and answers 201 with its Location.
   */
  upload(
    method: string,
    sessionId: string,
    query: URLSearchParams,
    headers: IncomingHttpHeaders,
    bytes: Buffer,
  ): GraphAnswer {
    const session = this.uploads.get(sessionId);
    if (!session || query.get('authtoken') !== session.authToken) throw itemNotFound();
    if (headers.authorization !== undefined)
      throw new GraphError(
        401,
        'InvalidAudience',
        'An upload URL carries its own token: send no Authorization header.',
      );
    if (this.env.now() > session.expires) {
      this.uploads.delete(sessionId);
      throw new GraphError(404, 'ErrorItemNotFound', 'The upload session has expired.');
    }
    if (method === 'DELETE') {
      this.uploads.delete(sessionId);
      return { status: 204 };
    }
    if (method !== 'PUT')
      throw new GraphError(405, 'MethodNotAllowed', `An upload URL takes PUT or DELETE, not ${method}.`);
    const range = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(headers['content-range'] ?? ''));
    if (!range) throw invalidRequest('The Content-Range header must be bytes {start}-{end}/{size}.');
    const [start, end, size] = range.slice(1).map(Number) as [number, number, number];
    if (size !== session.size)
      throw invalidRequest(`The Content-Range size ${size} is not the session's ${session.size}.`);
    if (start !== session.received)
      throw new GraphError(416, 'InvalidRange', `The next expected range starts at ${session.received}, not ${start}.`);
    if (end < start || end >= size || bytes.length !== end - start + 1)
      throw invalidRequest(`The range ${start}-${end} does not hold the ${bytes.length} bytes sent.`);
    if (Number(headers['content-length'] ?? bytes.length) !== bytes.length)
      throw invalidRequest('The Content-Length header does not match the bytes sent.');
    const last = end === size - 1;
    if (bytes.length > UPLOAD_LIMITS.maxChunk)
      throw invalidRequest(`A PUT carries at most ${UPLOAD_LIMITS.maxChunk} bytes.`);
    if (!last && bytes.length % UPLOAD_LIMITS.chunkUnit !== 0)
      throw invalidRequest(
        `Every range but the last must be a multiple of 320 KiB (${UPLOAD_LIMITS.chunkUnit} bytes).`,
      );
    session.chunks.push(bytes);
    session.received = end + 1;
    const expirationDateTime = iso(session.expires);
    if (!last) return { status: 200, body: { expirationDateTime, nextExpectedRanges: [String(session.received)] } };
    this.uploads.delete(sessionId);
    const message = session.mailbox.messages.get(session.messageId);
    if (!message) throw itemNotFound();
    const attachment: StoredAttachment = {
      id: exchangeId('BEgAQ='),
      name: session.name,
      contentType: session.contentType,
      bytes: Buffer.concat(session.chunks),
      isInline: session.isInline,
      ...(session.contentId ? { contentId: session.contentId } : {}),
      lastModified: this.env.now(),
    };
    message.attachments.push(attachment);
    session.mailbox.touch(message);
    return {
      status: 201,
      headers: {
        Location: `https://outlook.office.com/api/v2.0/Users('${session.mailbox.user.id}')/Messages('${message.id}')/Attachments('${attachment.id}')`,
      },
    };
  }
}

// ---------------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------------

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function preview(m: StoredMessage): string {
  const text = m.body.contentType === 'html' ? m.body.content.replace(/<[^>]*>/g, ' ') : m.body.content;
  return text.replace(/\s+/g, ' ').trim().slice(0, 255);
}

/** A message as Graph answers it; `internetMessageHeaders` only when `select` names it, as Graph sends them. */
export function renderMessage(m: StoredMessage, select?: readonly string[]): Record<string, unknown> {
  return {
    ...(select?.includes('internetMessageHeaders') ? { internetMessageHeaders: m.headers.map((h) => ({ ...h })) } : {}),
    '@odata.etag': `W/"${m.changeKey}"`,
    id: m.id,
    createdDateTime: iso(m.created),
    lastModifiedDateTime: iso(m.modified),
    changeKey: m.changeKey,
    categories: [...m.categories],
    receivedDateTime: iso(m.received),
    ...(m.sent !== undefined ? { sentDateTime: iso(m.sent) } : {}),
    hasAttachments: m.attachments.some((a) => !a.isInline),
    internetMessageId: m.internetMessageId,
    subject: m.subject,
    bodyPreview: preview(m),
    importance: m.importance,
    parentFolderId: m.folderId,
    conversationId: m.conversationId,
    isDeliveryReceiptRequested: false,
    isReadReceiptRequested: false,
    isRead: m.isRead,
    isDraft: m.isDraft,
    webLink: `https://outlook.office365.com/owa/?ItemID=${encodeURIComponent(m.id)}&exvsurl=1&viewmodel=ReadMessageItem`,
    inferenceClassification: 'focused',
    body: { ...m.body },
    ...(m.from ? { sender: structuredClone(m.from), from: structuredClone(m.from) } : {}),
    toRecipients: structuredClone(m.to),
    ccRecipients: structuredClone(m.cc),
    bccRecipients: structuredClone(m.bcc),
    replyTo: structuredClone(m.replyTo),
    flag: { flagStatus: m.flagStatus },
  };
}

export function renderAttachment(a: StoredAttachment): Record<string, unknown> {
  return {
    '@odata.type': '#microsoft.graph.fileAttachment',
    '@odata.mediaContentType': a.contentType,
    id: a.id,
    lastModifiedDateTime: iso(a.lastModified),
    name: a.name,
    contentType: a.contentType,
    size: a.bytes.length,
    isInline: a.isInline,
    contentId: a.contentId ?? null,
    contentLocation: null,
    contentBytes: a.bytes.toString('base64'),
  };
}

function renderFolder(mailbox: Mailbox, f: MailFolder): Record<string, unknown> {
  const inFolder = [...mailbox.messages.values()].filter((m) => m.folderId === f.id);
  return {
    id: f.id,
    displayName: f.displayName,
    parentFolderId: f.parentId,
    childFolderCount: mailbox.children(f).length,
    unreadItemCount: inFolder.filter((m) => !m.isRead).length,
    totalItemCount: inFolder.length,
    isHidden: f.isHidden,
  };
}

/** `$select`: the named properties, plus `id` and the OData annotations, which Graph always sends. */
function project(entity: Record<string, unknown>, select: readonly string[] | undefined): Record<string, unknown> {
  if (!select?.length) return entity;
  return Object.fromEntries(
    Object.entries(entity).filter(([k]) => k === 'id' || k.startsWith('@odata.') || select.includes(k)),
  );
}

// ---------------------------------------------------------------------------------------------------
// Query options shared by the lists
// ---------------------------------------------------------------------------------------------------

export interface GraphCall {
  mailbox: Mailbox;
  state: GraphState;
  checker: GraphChecker;
  operation: GraphOperation;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  headers: IncomingHttpHeaders;
  /** `http://127.0.0.1:<port>/v1.0`: what Graph's links start with. */
  base: string;
  /** The path asked for, after `/v1.0` (`/me/messages`): what a nextLink repeats. */
  path: string;
  /** Where upload sessions' URLs point (the fake's upload port), when it has one. */
  uploadBase?: string;
}

export interface GraphAnswer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const listOf = (v: string | null) => (v ? v.split(',').map((s) => s.trim()) : undefined);

function messageFields(checker: GraphChecker): Fields<StoredMessage> {
  const declared = checker.propertiesOf('mail', 'microsoft.graph.message');
  return {
    typeName: 'microsoft.graph.message',
    declared: (p) => declared.has(p),
    fields: {
      isRead: { type: 'boolean', get: (m) => m.isRead },
      isDraft: { type: 'boolean', get: (m) => m.isDraft },
      hasAttachments: { type: 'boolean', get: (m) => m.attachments.some((a) => !a.isInline) },
      importance: { type: 'enum', get: (m) => m.importance },
      'flag/flagStatus': { type: 'enum', get: (m) => m.flagStatus },
      receivedDateTime: { type: 'datetime', get: (m) => m.received },
      sentDateTime: { type: 'datetime', get: (m) => m.sent },
      createdDateTime: { type: 'datetime', get: (m) => m.created },
      lastModifiedDateTime: { type: 'datetime', get: (m) => m.modified },
      subject: { type: 'string', get: (m) => m.subject },
      conversationId: { type: 'string', get: (m) => m.conversationId },
      parentFolderId: { type: 'string', get: (m) => m.folderId },
      internetMessageId: { type: 'string', get: (m) => m.internetMessageId },
      'from/emailAddress/address': { type: 'string', get: (m) => m.from?.emailAddress.address },
      'from/emailAddress/name': { type: 'string', get: (m) => m.from?.emailAddress.name },
      'sender/emailAddress/address': { type: 'string', get: (m) => m.from?.emailAddress.address },
      categories: { type: 'strings', get: (m) => m.categories },
    },
  };
}

function folderFields(checker: GraphChecker): Fields<{ mailbox: Mailbox; folder: MailFolder }> {
  const declared = checker.propertiesOf('mail', 'microsoft.graph.mailFolder');
  return {
    typeName: 'microsoft.graph.mailFolder',
    declared: (p) => declared.has(p),
    fields: {
      displayName: { type: 'string', get: ({ folder }) => folder.displayName },
      isHidden: { type: 'boolean', get: ({ folder }) => folder.isHidden },
      parentFolderId: { type: 'string', get: ({ folder }) => folder.parentId },
      totalItemCount: { type: 'int', get: (x) => renderFolder(x.mailbox, x.folder).totalItemCount },
      unreadItemCount: { type: 'int', get: (x) => renderFolder(x.mailbox, x.folder).unreadItemCount },
    },
  };
}

const searchText = (m: StoredMessage): SearchText => {
  const people = (rs: Recipient[]) => rs.map((r) => `${r.emailAddress.name ?? ''} ${r.emailAddress.address}`).join(' ');
  return {
    subject: m.subject,
    body: m.body.content,
    from: m.from ? people([m.from]) : '',
    to: people(m.to),
    cc: people(m.cc),
    attachment: m.attachments.map((a) => a.name).join(' '),
  };
};

/** `Prefer: odata.maxpagesize=N`, when the request says it. */
export function maxPageSize(headers: IncomingHttpHeaders): number | undefined {
  const m = /odata\.maxpagesize\s*=\s*(\d+)/i.exec(String(headers.prefer ?? ''));
  return m ? Number(m[1]) : undefined;
}

function link(call: GraphCall, query: URLSearchParams): string {
  return `${call.base}${call.path}?${query.toString()}`;
}

/**
 * One page of a list, `$top` (up to `max`) or `Prefer: odata.maxpagesize` items from `$skip`, and the
 * nextLink; each item cut to `$select` unless its `render` does that itself (`selected: true`). With
 * `skipToken` (a `$search`, which takes no `$skip`) the nextLink carries an opaque `$skiptoken` instead.
 */
export function page<T>(
  call: GraphCall,
  items: T[],
  render: (item: T) => Record<string, unknown>,
  context: string,
  max: number,
  options: { selected?: boolean; skipToken?: boolean } = {},
): GraphAnswer {
  const top = call.query.get('$top');
  if (top !== null && Number(top) > max)
    throw invalidRequest(`The value '${top}' of the query option '$top' is over the limit of ${max}.`);
  const preferred = maxPageSize(call.headers);
  const size = top !== null ? Number(top) : Math.min(preferred ?? 10, max);
  const token = call.query.get('$skiptoken');
  const skipped =
    token !== null ? /^skip-(\d+)$/.exec(Buffer.from(token, 'base64url').toString('utf8'))?.[1] : undefined;
  if (token !== null && skipped === undefined) throw badRequest(`The $skiptoken '${token}' is not valid.`);
  const skip = Number(skipped ?? call.query.get('$skip') ?? 0);
  const slice = items.slice(skip, skip + size);
  const next = new URLSearchParams(call.query);
  if (options.skipToken) next.set('$skiptoken', Buffer.from(`skip-${skip + size}`).toString('base64url'));
  else next.set('$skip', String(skip + size));
  const select = listOf(call.query.get('$select'));
  return {
    status: 200,
    body: {
      '@odata.context': `${call.base}/$metadata#${context}`,
      ...(call.query.get('$count') === 'true' ? { '@odata.count': items.length } : {}),
      value: slice.map((item) => (options.selected ? render(item) : project(render(item), select))),
      ...(size > 0 && skip + size < items.length ? { '@odata.nextLink': link(call, next) } : {}),
    },
    ...(preferred !== undefined && top === null
      ? { headers: { 'Preference-Applied': `odata.maxpagesize=${size}` } }
      : {}),
  };
}

const userContext = (call: GraphCall) => `users('${call.mailbox.user.id}')`;

/** `$expand`: only a message's attachments are served. */
function expandsAttachments(call: GraphCall): boolean {
  const expand = listOf(call.query.get('$expand'));
  const other = expand?.find((e) => e !== 'attachments');
  if (other) throw new UnsupportedByFakeError(`$expand=${other}`);
  return expand !== undefined;
}

function messageView(call: GraphCall): (m: StoredMessage) => Record<string, unknown> {
  const withAttachments = expandsAttachments(call);
  const select = listOf(call.query.get('$select'));
  return (m) => ({
    ...renderMessage(m, select),
    ...(withAttachments ? { attachments: m.attachments.map(renderAttachment) } : {}),
  });
}

// ---------------------------------------------------------------------------------------------------
// Bodies clients send
// ---------------------------------------------------------------------------------------------------

type MessageBody = Partial<{
  subject: string;
  body: { contentType?: string; content?: string };
  toRecipients: Recipient[];
  ccRecipients: Recipient[];
  bccRecipients: Recipient[];
  replyTo: Recipient[];
  from: Recipient;
  importance: Importance;
  categories: string[];
  isRead: boolean;
  flag: { flagStatus?: FlagStatus };
  attachments: {
    '@odata.type'?: string;
    name?: string;
    contentType?: string;
    contentBytes?: string;
    isInline?: boolean;
    contentId?: string;
  }[];
  internetMessageHeaders: { name?: string; value?: string }[];
}> &
  Record<string, unknown>;

/** The top-level names of an action's body, any case (`Message`, `message`), as Graph binds them. */
function actionParameter(body: unknown, name: string): unknown {
  const entry = Object.entries((body ?? {}) as Record<string, unknown>).find(([k]) => k.toLowerCase() === name);
  return entry?.[1];
}

const DRAFT_ONLY = ['subject', 'body', 'toRecipients', 'ccRecipients', 'bccRecipients', 'replyTo', 'from', 'sender'];
const ALWAYS_UPDATABLE = [
  'isRead',
  'flag',
  'categories',
  'importance',
  'inferenceClassification',
  'isReadReceiptRequested',
  'isDeliveryReceiptRequested',
];

function attachmentsOf(body: MessageBody, now: number): StoredAttachment[] {
  return (body.attachments ?? []).map((a) => {
    if (a['@odata.type'] !== '#microsoft.graph.fileAttachment')
      throw new UnsupportedByFakeError(`an attachment of type ${a['@odata.type'] ?? '(none given)'}`);
    if (!a.name || a.contentBytes === undefined) throw badRequest('A file attachment needs its name and contentBytes.');
    return {
      id: '',
      name: a.name,
      contentType: a.contentType ?? 'application/octet-stream',
      bytes: Buffer.from(a.contentBytes, 'base64'),
      isInline: a.isInline ?? false,
      ...(a.contentId ? { contentId: a.contentId } : {}),
      lastModified: now,
    };
  });
}

/** A JSON message's `internetMessageHeaders`: Graph takes custom headers only, named `x-…`. */
function customHeaders(body: MessageBody): MessageHeader[] {
  return (body.internetMessageHeaders ?? []).map((h) => {
    if (!h.name || !/^x-/i.test(h.name))
      throw new GraphError(
        400,
        'InvalidInternetMessageHeader',
        `The internet message header name '${h.name ?? ''}' should start with 'x-' or 'X-'.`,
      );
    return { name: h.name, value: h.value ?? '' };
  });
}

/** A new message from a client's body: a draft in `folder` (Drafts unless the path names one). */
function newDraft(mailbox: Mailbox, body: MessageBody, folder: MailFolder): StoredMessage {
  const now = mailbox.now;
  return mailbox.add({
    folderId: folder.id,
    conversationId: exchangeId('AAQ='),
    internetMessageId: `<${randomUUID()}@${mailbox.user.mail.split('@')[1]}>`,
    headers: customHeaders(body),
    subject: body.subject ?? '',
    body: {
      contentType: body.body?.contentType?.toLowerCase() === 'html' ? 'html' : 'text',
      content: body.body?.content ?? '',
    },
    from: body.from ?? { emailAddress: { name: mailbox.user.displayName, address: mailbox.user.mail } },
    to: body.toRecipients ?? [],
    cc: body.ccRecipients ?? [],
    bcc: body.bccRecipients ?? [],
    replyTo: body.replyTo ?? [],
    received: now,
    created: now,
    isRead: true,
    isDraft: true,
    importance: body.importance ?? 'normal',
    flagStatus: body.flag?.flagStatus ?? 'notFlagged',
    categories: body.categories ?? [],
    attachments: attachmentsOf(body, now),
  });
}

/** Graph's limit on a request carrying MIME (sendMail, a message created from MIME): 4 MB. */
const MIME_REQUEST_MAX = 4 * 1024 * 1024;

const mimeAddresses = (value: string | undefined): Recipient[] =>
  (value ?? '')
    .split(/,(?=(?:[^"]*"[^"]*")*[^"]*$)/)
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const angle = /^(.*)<([^>]+)>$/.exec(part);
      const name = angle?.[1]!.trim().replace(/^"|"$/g, '').replace(/\\(.)/g, '$1');
      return { emailAddress: { address: (angle ? angle[2]! : part).trim(), ...(name ? { name } : {}) } };
    });

/**
 * A message from its MIME (base64, as sendMail and a create in MIME take it), a draft in Drafts: its
 * headers kept as its internet headers, its HTML (else text) body, its parts with a file name as file
 * attachments. A reply (`In-Reply-To` or `References` naming a message of the mailbox) joins that
 * message's conversation, the fake's stand-in for Exchange's threading.
 */
function draftFromMime(mailbox: Mailbox, base64: string): StoredMessage {
  if (base64.length > MIME_REQUEST_MAX)
    throw new GraphError(413, 'ErrorRequestEntityTooLarge', 'The request is larger than the 4 MB allowed for MIME.');
  const root: MimeNode = parseMime(Buffer.from(base64, 'base64'));
  const header = (name: string) => headerOf(root.headers, name);
  const from = mimeAddresses(header('from'))[0];
  const [to, cc, bcc, replyTo] = ['to', 'cc', 'bcc', 'reply-to'].map((n) => mimeAddresses(header(n)));
  if (!from && !to!.length && !cc!.length && !bcc!.length)
    throw new GraphError(400, 'ErrorMimeContentInvalid', 'The MIME content is invalid: it has no sender or recipient.');
  const parts = leaves(root);
  const text = (type: string) => parts.find((n) => !n.filename && n.mimeType === type);
  const chosen = text('text/html') ?? text('text/plain');
  const now = mailbox.now;
  const referenced = [...(header('references') ?? '').split(/\s+/), header('in-reply-to') ?? '']
    .map((id) => id.trim())
    .filter(Boolean);
  const original = [...mailbox.messages.values()].find((m) => referenced.includes(m.internetMessageId));
  return mailbox.add({
    folderId: mailbox.folder('drafts').id,
    conversationId: original?.conversationId ?? exchangeId('AAQ='),
    internetMessageId: header('message-id')?.trim() || `<${randomUUID()}@${mailbox.user.mail.split('@')[1]}>`,
    headers: root.headers.map((h) => ({ name: h.name, value: h.value })),
    subject: header('subject') ?? '',
    body: {
      contentType: chosen?.mimeType === 'text/html' ? 'html' : 'text',
      content: chosen ? chosen.content.toString('utf8') : '',
    },
    from: from ?? { emailAddress: { name: mailbox.user.displayName, address: mailbox.user.mail } },
    to: to!,
    cc: cc!,
    bcc: bcc!,
    replyTo: replyTo!,
    received: now,
    created: now,
    isRead: true,
    isDraft: true,
    importance: 'normal',
    flagStatus: 'notFlagged',
    categories: [],
    attachments: parts
      .filter((n) => n.filename)
      .map((n) => {
        const contentId = headerOf(n.headers, 'content-id')?.trim().replace(/^<|>$/g, '');
        return {
          id: '',
          name: n.filename,
          contentType: n.mimeType,
          bytes: n.content,
          isInline: /^inline/i.test(headerOf(n.headers, 'content-disposition') ?? ''),
          ...(contentId ? { contentId } : {}),
          lastModified: now,
        };
      }),
  });
}

/** Sends a draft: it goes to Sent Items as a new item (or away, unless saved), copies to the fake's own recipients. */
function sendDraft(call: GraphCall, draft: StoredMessage, save: boolean): void {
  const { mailbox, state } = call;
  const all = [...draft.to, ...draft.cc, ...draft.bcc];
  if (!all.length)
    throw new GraphError(400, 'ErrorInvalidRecipients', 'At least one recipient is required, but none were found.');
  const invalid = all.find((r) => !/^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/.test(r.emailAddress.address));
  if (invalid)
    throw new GraphError(
      400,
      'ErrorInvalidRecipients',
      `The recipient '${invalid.emailAddress.address}' is not a valid SMTP address.`,
    );
  draft.isDraft = false;
  draft.sent = draft.received = mailbox.now;
  state.deliverLocally(draft);
  if (save) mailbox.move(draft, mailbox.folder('sentitems'));
  else mailbox.remove(draft);
}

// ---------------------------------------------------------------------------------------------------
// Handlers, by operationId
// ---------------------------------------------------------------------------------------------------

const folderOf = (call: GraphCall) => call.mailbox.folder(call.params['mailFolder-id']!);

function childOf(call: GraphCall): MailFolder {
  const child = call.mailbox.folder(call.params['mailFolder-id1']!);
  if (child.parentId !== folderOf(call).id) throw itemNotFound();
  return child;
}

const messageOf = (call: GraphCall) => call.mailbox.message(call.params['message-id']!, call.params['mailFolder-id']);

function attachmentOf(call: GraphCall): StoredAttachment {
  const attachment = messageOf(call).attachments.find((a) => a.id === call.params['attachment-id']);
  if (!attachment) throw itemNotFound();
  return attachment;
}

function listFolders(call: GraphCall, parent: MailFolder): GraphAnswer {
  const { mailbox, query } = call;
  const hidden = query.get('includeHiddenFolders');
  if (hidden !== null && hidden !== 'true' && hidden !== 'false')
    throw badRequest(`The value '${hidden}' of includeHiddenFolders is not a boolean.`);
  // Hidden folders are left out unless asked for.
  let folders = mailbox
    .children(parent)
    .filter((folder) => hidden === 'true' || !folder.isHidden)
    .map((folder) => ({ mailbox, folder }));
  const filter = query.get('$filter');
  if (filter) folders = folders.filter(compileFilter(filter, folderFields(call.checker)));
  const orderby = query.get('$orderby');
  if (orderby) folders.sort(compileOrderBy(orderby, folderFields(call.checker)));
  if (query.has('$search')) throw new UnsupportedByFakeError('$search on mail folders');
  if (query.has('$expand')) throw new UnsupportedByFakeError('$expand on mail folders');
  return page(call, folders, (x) => renderFolder(mailbox, x.folder), `${userContext(call)}/mailFolders`, 1000);
}

function createFolder(call: GraphCall, parent: MailFolder): GraphAnswer {
  const body = call.body as { displayName?: string; isHidden?: boolean };
  const unknown = Object.keys(body).filter((k) => !['displayName', 'isHidden'].includes(k) && !k.startsWith('@odata.'));
  if (unknown.length) throw badRequest(`The property '${unknown[0]}' cannot be set when a folder is created.`);
  if (!body.displayName?.trim()) throw invalidRequest('A folder needs a displayName.');
  assertFreeName(call.mailbox, parent, body.displayName);
  const id = exchangeId('AAEMAAA=');
  const folder = { id, displayName: body.displayName, parentId: parent.id, isHidden: body.isHidden ?? false };
  call.mailbox.folders.set(id, folder);
  return {
    status: 201,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/mailFolders/$entity`,
      ...renderFolder(call.mailbox, folder),
    },
  };
}

function assertFreeName(mailbox: Mailbox, parent: MailFolder, name: string, except?: string): void {
  const taken = mailbox
    .children(parent)
    .some((f) => f.id !== except && f.displayName.toLowerCase() === name.toLowerCase());
  if (taken) throw new GraphError(409, 'ErrorFolderExists', 'A folder with the specified name already exists.');
}

function getFolder(call: GraphCall, folder: MailFolder): GraphAnswer {
  if (call.query.has('$expand')) throw new UnsupportedByFakeError('$expand on a mail folder');
  return {
    status: 200,
    body: project(
      {
        '@odata.context': `${call.base}/$metadata#${userContext(call)}/mailFolders/$entity`,
        ...renderFolder(call.mailbox, folder),
      },
      listOf(call.query.get('$select')),
    ),
  };
}

function updateFolder(call: GraphCall, folder: MailFolder): GraphAnswer {
  const body = call.body as { displayName?: string };
  const other = Object.keys(body).find((k) => k !== 'displayName' && !k.startsWith('@odata.'));
  if (other) throw badRequest(`The property '${other}' of a mail folder cannot be updated.`);
  if (body.displayName !== undefined) {
    if (!body.displayName.trim()) throw invalidRequest('A folder needs a displayName.');
    assertFreeName(
      call.mailbox,
      call.mailbox.folders.get(folder.parentId) ?? call.mailbox.root,
      body.displayName,
      folder.id,
    );
    folder.displayName = body.displayName;
  }
  return getFolder({ ...call, query: new URLSearchParams() }, folder);
}

/**
 * `POST …/mailFolders/{id}/move`: the folder, with all it holds, under `destinationId` (a folder's ID
 * or well-known name, `msgfolderroot` for the top); its ID stays. A well-known folder stays where it
 * is, and a folder cannot go under itself.
 */
function moveFolder(call: GraphCall): GraphAnswer {
  const folder = folderOf(call);
  if (folder.wellKnown)
    throw new GraphError(400, 'ErrorMoveDistinguishedFolder', 'Distinguished folders cannot be moved.');
  const target = destination(call);
  for (let at: MailFolder | undefined = target; at; at = call.mailbox.folders.get(at.parentId))
    if (at.id === folder.id)
      throw new GraphError(400, 'ErrorMoveCopyFailed', 'A folder cannot be moved into itself or its subfolders.');
  assertFreeName(call.mailbox, target, folder.displayName, folder.id);
  folder.parentId = target.id;
  return {
    status: 201,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/mailFolders/$entity`,
      ...renderFolder(call.mailbox, folder),
    },
  };
}

function deleteFolder(call: GraphCall, folder: MailFolder): GraphAnswer {
  if (folder.wellKnown)
    throw new GraphError(400, 'ErrorDeleteDistinguishedFolder', 'Distinguished folders cannot be deleted.');
  call.mailbox.deleteFolder(folder);
  return { status: 204 };
}

function listMessages(call: GraphCall): GraphAnswer {
  const { mailbox, query } = call;
  const folder = call.params['mailFolder-id'] !== undefined ? folderOf(call) : undefined;
  const [search, filter, orderby] = [query.get('$search'), query.get('$filter'), query.get('$orderby')];
  if (search !== null && (filter !== null || orderby !== null))
    throw new GraphError(
      400,
      'ErrorInvalidUrlQuery',
      `The query parameter '${filter !== null ? '$filter' : '$orderby'}' is not supported with '$search'.`,
    );
  if (search !== null && query.has('$skip'))
    throw new GraphError(400, 'ErrorInvalidUrlQuery', "The query parameter '$skip' is not supported with '$search'.");
  const fields = messageFields(call.checker);
  let messages = [...mailbox.messages.values()].filter((m) => !folder || m.folderId === folder.id);
  if (filter !== null) messages = messages.filter(compileFilter(filter, fields));
  if (search !== null) {
    const matches = compileSearch(search);
    messages = messages.filter((m) => matches(searchText(m)));
  }
  const newestFirst = (a: StoredMessage, b: StoredMessage) => b.received - a.received || (a.id < b.id ? -1 : 1);
  messages.sort(orderby !== null ? compileOrderBy(orderby, fields) : newestFirst);
  const context = folder
    ? `${userContext(call)}/mailFolders('${folder.id}')/messages`
    : `${userContext(call)}/messages`;
  return page(call, messages, messageView(call), context, 1000, { skipToken: search !== null });
}

function getMessage(call: GraphCall): GraphAnswer {
  const message = messageOf(call);
  const context = `${call.base}/$metadata#${userContext(call)}/messages/$entity`;
  return {
    status: 200,
    body: project({ '@odata.context': context, ...messageView(call)(message) }, listOf(call.query.get('$select'))),
  };
}

function createMessage(call: GraphCall): GraphAnswer {
  const folder = call.params['mailFolder-id'] !== undefined ? folderOf(call) : call.mailbox.folder('drafts');
  const message =
    typeof call.body === 'string'
      ? draftFromMime(call.mailbox, call.body)
      : newDraft(call.mailbox, call.body as MessageBody, folder);
  return {
    status: 201,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/messages/$entity`,
      ...renderMessage(message),
    },
  };
}

function updateMessage(call: GraphCall): GraphAnswer {
  const message = messageOf(call);
  const body = call.body as MessageBody;
  for (const key of Object.keys(body)) {
    if (key.startsWith('@odata.') || ALWAYS_UPDATABLE.includes(key)) continue;
    if (!DRAFT_ONLY.includes(key)) throw badRequest(`The property '${key}' of a message cannot be updated.`);
    if (!message.isDraft)
      throw new GraphError(
        400,
        'ErrorInvalidPropertyUpdateSentMessage',
        'Update of some properties is not allowed for sent messages.',
      );
  }
  if (body.isRead !== undefined) message.isRead = body.isRead;
  if (body.flag?.flagStatus !== undefined) message.flagStatus = body.flag.flagStatus;
  if (body.categories !== undefined) message.categories = [...body.categories];
  if (body.importance !== undefined) message.importance = body.importance;
  if (body.subject !== undefined) message.subject = body.subject;
  if (body.body !== undefined)
    message.body = {
      contentType: body.body.contentType?.toLowerCase() === 'html' ? 'html' : 'text',
      content: body.body.content ?? '',
    };
  if (body.toRecipients !== undefined) message.to = body.toRecipients;
  if (body.ccRecipients !== undefined) message.cc = body.ccRecipients;
  if (body.bccRecipients !== undefined) message.bcc = body.bccRecipients;
  if (body.replyTo !== undefined) message.replyTo = body.replyTo;
  if (body.from !== undefined) message.from = body.from;
  call.mailbox.touch(message);
  return {
    status: 200,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/messages/$entity`,
      ...renderMessage(message),
    },
  };
}

function destination(call: GraphCall): MailFolder {
  const id = actionParameter(call.body, 'destinationid');
  if (typeof id !== 'string' || !id) throw invalidRequest('The destinationId parameter is required.');
  return call.mailbox.folder(id);
}

function moveOrCopy(call: GraphCall, copy: boolean): GraphAnswer {
  const message = messageOf(call);
  const target = destination(call);
  const immutable = /IdType\s*=\s*"?ImmutableId/i.test(String(call.headers.prefer ?? ''));
  const result = copy ? call.mailbox.copy(message, target) : call.mailbox.move(message, target, immutable);
  return {
    status: 201,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/messages/$entity`,
      ...renderMessage(result),
    },
  };
}

function send(call: GraphCall): GraphAnswer {
  const message = messageOf(call);
  if (!message.isDraft) throw new GraphError(400, 'ErrorInvalidOperation', 'Only a draft can be sent.');
  sendDraft(call, message, true);
  return { status: 202 };
}

function sendMail(call: GraphCall): GraphAnswer {
  const mime = typeof call.body === 'string';
  const message = mime ? undefined : (actionParameter(call.body, 'message') as MessageBody | undefined);
  if (!mime && (!message || typeof message !== 'object')) throw invalidRequest('The message parameter is required.');
  // Graph's reference gives saveToSentItems as true unless the request says false; MIME is always saved.
  const save = mime ? true : actionParameter(call.body, 'savetosentitems');
  const draft = mime
    ? draftFromMime(call.mailbox, call.body as string)
    : newDraft(call.mailbox, message!, call.mailbox.folder('drafts'));
  try {
    sendDraft(call, draft, save !== false);
  } catch (e) {
    call.mailbox.messages.delete(draft.id);
    throw e;
  } finally {
    // The draft was never in Drafts as far as any client could see: delta must not report it gone.
    call.mailbox.tombstones = call.mailbox.tombstones.filter((t) => t.id !== draft.id);
  }
  return { status: 202 };
}

/**
 * `createReply`: a draft answering the message, in its conversation, to its Reply-To (else its sender),
 * subject `RE: …`, with the threading headers; a `message` given sets the draft's properties as a PATCH
 * would, and a `comment` (not both with `message.body`) is its body.
 */
function createReply(call: GraphCall): GraphAnswer {
  const original = messageOf(call);
  const given = (actionParameter(call.body, 'message') ?? {}) as MessageBody;
  const comment = actionParameter(call.body, 'comment');
  if (comment !== undefined && comment !== null && given.body !== undefined)
    throw badRequest('Specify either a comment or the body property of the message parameter, not both.');
  const references = (original.headers.find((h) => h.name.toLowerCase() === 'references')?.value ?? '')
    .split(/\s+/)
    .filter(Boolean);
  const draft = newDraft(
    call.mailbox,
    {
      subject: /^re:/i.test(original.subject) ? original.subject : `RE: ${original.subject}`,
      body: { contentType: 'html', content: typeof comment === 'string' ? comment : '' },
      toRecipients: structuredClone(original.replyTo.length ? original.replyTo : original.from ? [original.from] : []),
      internetMessageHeaders: [],
    },
    call.mailbox.folder('drafts'),
  );
  draft.conversationId = original.conversationId;
  draft.headers = [
    { name: 'In-Reply-To', value: original.internetMessageId },
    { name: 'References', value: [...references, original.internetMessageId].join(' ') },
    ...customHeaders(given),
  ];
  const { internetMessageHeaders: _headers, ...settable } = given;
  const answer = updateMessage({ ...call, params: { ...call.params, 'message-id': draft.id }, body: settable });
  return { ...answer, status: 201 };
}

/** Graph's limit on one attachment POSTed as JSON (larger ones go by upload session): about 3 MB. */
const POSTED_ATTACHMENT_MAX = 3 * 1024 * 1024;

function createAttachment(call: GraphCall): GraphAnswer {
  const message = messageOf(call);
  const [attachment] = attachmentsOf({ attachments: [call.body as never] } as MessageBody, call.mailbox.now);
  if (attachment!.bytes.length > POSTED_ATTACHMENT_MAX)
    throw new GraphError(413, 'ErrorRequestEntityTooLarge', 'The attachment is too large: use an upload session.');
  attachment!.id = exchangeId('BEgAQ=');
  message.attachments.push(attachment!);
  call.mailbox.touch(message);
  return {
    status: 201,
    body: {
      '@odata.context': `${call.base}/$metadata#${userContext(call)}/messages('${message.id}')/attachments/$entity`,
      ...renderAttachment(attachment!),
    },
  };
}

function deleteAttachment(call: GraphCall): GraphAnswer {
  const message = messageOf(call);
  const attachment = attachmentOf(call);
  message.attachments = message.attachments.filter((a) => a !== attachment);
  call.mailbox.touch(message);
  return { status: 204 };
}

/** `attachments/createUploadSession`: a session for one file attachment of a draft, its upload URL on the fake's upload port. */
function createUploadSession(call: GraphCall): GraphAnswer {
  const message = messageOf(call);
  if (!message.isDraft)
    throw new GraphError(400, 'ErrorInvalidOperation', 'Attachments can only be uploaded to a draft.');
  if (!call.uploadBase) throw new UnsupportedByFakeError('an upload session without the upload port');
  const item = (actionParameter(call.body, 'attachmentitem') ?? {}) as {
    attachmentType?: string;
    name?: string;
    size?: number;
    contentType?: string;
    isInline?: boolean;
    contentId?: string;
  };
  if (item.attachmentType?.toLowerCase() !== 'file')
    throw new UnsupportedByFakeError(`an upload session of attachmentType ${item.attachmentType ?? '(none)'}`);
  if (!item.name || typeof item.size !== 'number') throw invalidRequest('An attachmentItem needs its name and size.');
  if (item.size < UPLOAD_LIMITS.minSize)
    throw new GraphError(
      400,
      'ErrorAttachmentSizeShouldNotBeLessThanMinimumSize',
      'Attachment size should not be less than the minimum size: POST a small attachment instead.',
    );
  if (item.size > UPLOAD_LIMITS.maxSize)
    throw new GraphError(400, 'ErrorAttachmentSizeShouldNotBeGreaterThanMaximumSize', 'The attachment is over 150 MB.');
  const session: UploadSession = {
    id: randomBytes(16).toString('hex'),
    authToken: randomBytes(24).toString('base64url'),
    mailbox: call.mailbox,
    messageId: message.id,
    name: item.name,
    contentType: item.contentType ?? 'application/octet-stream',
    size: item.size,
    isInline: item.isInline ?? false,
    ...(item.contentId ? { contentId: item.contentId } : {}),
    chunks: [],
    received: 0,
    expires: call.mailbox.now + UPLOAD_LIMITS.lifetimeMs,
  };
  call.state.uploads.set(session.id, session);
  return {
    status: 201,
    body: {
      '@odata.context': `${call.base}/$metadata#microsoft.graph.uploadSession`,
      uploadUrl: `${call.uploadBase}/${session.id}?authtoken=${session.authToken}`,
      expirationDateTime: iso(session.expires),
      nextExpectedRanges: ['0-'],
    },
  };
}

/**
 * One page of a delta round (`$top` or `Prefer: odata.maxpagesize`, 10 by default): the removals
 * first, then the items still there as `render` gives them (undefined: left out), what is left for
 * the next page, and the page size taken.
 */
export function deltaPage(
  call: Pick<GraphCall, 'query' | 'headers'>,
  cursor: { removed: readonly string[]; ids: readonly string[] },
  odataType: string,
  render: (id: string) => Record<string, unknown> | undefined,
): { value: Record<string, unknown>[]; removed: string[]; ids: string[]; size: number } {
  const top = call.query.get('$top');
  const size = Math.max(1, maxPageSize(call.headers) ?? (top !== null ? Number(top) : 10));
  const value: Record<string, unknown>[] = [];
  let removed = [...cursor.removed];
  let ids = [...cursor.ids];
  while (value.length < size && (removed.length || ids.length)) {
    if (removed.length) {
      value.push({ '@odata.type': odataType, id: removed[0]!, '@removed': { reason: 'deleted' } });
      removed = removed.slice(1);
      continue;
    }
    const item = render(ids[0]!);
    ids = ids.slice(1);
    if (item) value.push({ '@odata.type': odataType, ...item });
  }
  return { value, removed, ids, size };
}

function delta(call: GraphCall): GraphAnswer {
  const { mailbox, query } = call;
  const folder = folderOf(call);
  const skiptoken = query.get('$skiptoken');
  const deltatoken = query.get('$deltatoken');
  const fields = messageFields(call.checker);
  let cursor: Extract<DeltaCursor, { kind: 'page' }>;
  const token = skiptoken ?? deltatoken;
  if (token !== null) {
    // Graph keeps a round's query options in its tokens; a token the fake never gave or has expired is gone.
    const found = mailbox.cursors.get(token);
    const expected = skiptoken !== null ? 'page' : 'delta';
    if (!found || found.kind !== expected || found.folderId !== folder.id)
      throw new GraphError(
        410,
        'syncStateNotFound',
        'The sync state is not found or has expired. Start a new sync without a token.',
      );
    if (found.kind === 'page') cursor = found;
    else {
      const predicate = found.filter ? compileFilter(found.filter, fields) : () => true;
      const changed = [...mailbox.messages.values()]
        .filter((m) => m.folderId === folder.id && m.seq > found.sinceSeq && predicate(m))
        .sort((a, b) => b.received - a.received);
      const removed = [
        ...new Set(
          mailbox.tombstones.filter((t) => t.folderId === folder.id && t.seq > found.sinceSeq).map((t) => t.id),
        ),
      ].filter((id) => mailbox.messages.get(id)?.folderId !== folder.id);
      cursor = {
        kind: 'page',
        folderId: folder.id,
        removed,
        ids: changed.map((m) => m.id),
        endSeq: mailbox.seq,
        ...optionsOf(found),
      };
    }
  } else {
    if (query.has('$search')) throw new UnsupportedByFakeError('$search in a delta query');
    if (query.has('$skip')) throw new UnsupportedByFakeError('$skip in a delta query');
    if (query.has('$expand')) throw new UnsupportedByFakeError('$expand in a delta query');
    if (query.has('changeType')) throw new UnsupportedByFakeError('changeType in a delta query');
    const orderby = query.get('$orderby');
    if (orderby !== null && !/^receivedDateTime\s+desc$/i.test(orderby.trim()))
      throw badRequest('A delta query of messages can only be ordered by receivedDateTime desc.');
    const filter = query.get('$filter') ?? undefined;
    const predicate = filter ? compileFilter(filter, fields) : () => true;
    const select = listOf(query.get('$select'));
    const ids = [...mailbox.messages.values()]
      .filter((m) => m.folderId === folder.id && predicate(m))
      .sort((a, b) => b.received - a.received)
      .map((m) => m.id);
    cursor = {
      kind: 'page',
      folderId: folder.id,
      removed: [],
      ids,
      endSeq: mailbox.seq,
      ...(select ? { select } : {}),
      ...(filter ? { filter } : {}),
    };
  }
  const { value, removed, ids, size } = deltaPage(call, cursor, '#microsoft.graph.message', (id) => {
    const message = mailbox.messages.get(id);
    return message && message.folderId === folder.id
      ? project(renderMessage(message, cursor.select), cursor.select)
      : undefined;
  });
  const where = `${call.base}${call.path.replace(/\/mailFolders\/[^/]+\/messages\/delta$/i, `/mailFolders('${folder.id}')/messages/delta`)}`;
  const more = removed.length > 0 || ids.length > 0;
  const next = more
    ? `${where}?$skiptoken=${mailbox.newCursor({ ...cursor, removed, ids })}`
    : `${where}?$deltatoken=${mailbox.newCursor({ kind: 'delta', folderId: folder.id, sinceSeq: cursor.endSeq, ...optionsOf(cursor) })}`;
  return {
    status: 200,
    body: {
      '@odata.context': `${call.base}/$metadata#Collection(message)`,
      [more ? '@odata.nextLink' : '@odata.deltaLink']: next,
      value,
    },
    ...(maxPageSize(call.headers) !== undefined
      ? { headers: { 'Preference-Applied': `odata.maxpagesize=${size}` } }
      : {}),
  };
}

const optionsOf = (c: DeltaCursor) => ({
  ...(c.select ? { select: c.select } : {}),
  ...(c.filter ? { filter: c.filter } : {}),
});

function me(call: GraphCall): GraphAnswer {
  if (call.query.has('$expand')) throw new UnsupportedByFakeError('$expand on a user');
  const { user } = call.mailbox;
  return {
    status: 200,
    body: project(
      {
        '@odata.context': `${call.base}/$metadata#users/$entity`,
        businessPhones: [],
        displayName: user.displayName,
        mail: user.mail,
        userPrincipalName: user.userPrincipalName,
        id: user.id,
      },
      listOf(call.query.get('$select')),
    ),
  };
}

function listAttachments(call: GraphCall): GraphAnswer {
  for (const option of ['$filter', '$search', '$orderby', '$expand'])
    if (call.query.has(option)) throw new UnsupportedByFakeError(`${option} on attachments`);
  const message = messageOf(call);
  return page(
    call,
    message.attachments,
    renderAttachment,
    `${userContext(call)}/messages('${message.id}')/attachments`,
    1000,
  );
}

/** The MIME form of a message: Graph answers it as `text/plain` (see the README beside the descriptions). */
function messageContent(call: GraphCall): GraphAnswer {
  const m = messageOf(call);
  const bytes = buildMime({
    ...(m.from ? { from: m.from.emailAddress } : {}),
    to: m.to.map((r) => r.emailAddress),
    cc: m.cc.map((r) => r.emailAddress),
    subject: m.subject,
    date: m.sent ?? m.received,
    messageId: m.internetMessageId,
    body: m.body,
    attachments: m.attachments,
  });
  return { status: 200, body: bytes, headers: { 'Content-Type': 'text/plain' } };
}

export const MAIL_HANDLERS: Record<string, (call: GraphCall) => GraphAnswer> = {
  user_GetUser: me,

  user_ListMailFolder: (call) => listFolders(call, call.mailbox.root),
  user_CreateMailFolder: (call) => createFolder(call, call.mailbox.root),
  user_GetMailFolder: (call) => getFolder(call, folderOf(call)),
  user_UpdateMailFolder: (call) => updateFolder(call, folderOf(call)),
  user_DeleteMailFolder: (call) => deleteFolder(call, folderOf(call)),
  'user.mailFolder_ListChildFolder': (call) => listFolders(call, folderOf(call)),
  'user.mailFolder_CreateChildFolder': (call) => createFolder(call, folderOf(call)),
  'user.mailFolder_GetChildFolder': (call) => getFolder(call, childOf(call)),
  'user.mailFolder_UpdateChildFolder': (call) => updateFolder(call, childOf(call)),
  'user.mailFolder_DeleteChildFolder': (call) => deleteFolder(call, childOf(call)),
  'user.mailFolder_move': moveFolder,

  user_ListMessage: listMessages,
  'user.mailFolder_ListMessage': listMessages,
  user_CreateMessage: createMessage,
  'user.mailFolder_CreateMessage': createMessage,
  user_GetMessage: getMessage,
  'user.mailFolder_GetMessage': getMessage,
  user_UpdateMessage: updateMessage,
  'user.mailFolder_UpdateMessage': updateMessage,
  user_DeleteMessage: (call) => {
    call.mailbox.remove(messageOf(call));
    return { status: 204 };
  },
  'user.mailFolder_DeleteMessage': (call) => MAIL_HANDLERS.user_DeleteMessage!(call),
  user_GetMessagesContent: messageContent,
  'user.mailFolder_GetMessagesContent': messageContent,

  'user.message_ListAttachment': listAttachments,
  'user.mailFolder.message_ListAttachment': listAttachments,
  'user.message_GetAttachment': (call) => ({
    status: 200,
    body: project(renderAttachment(attachmentOf(call)), listOf(call.query.get('$select'))),
  }),
  'user.mailFolder.message_GetAttachment': (call) => MAIL_HANDLERS['user.message_GetAttachment']!(call),
  'user.message.attachment_GetContent': (call) => {
    const attachment = attachmentOf(call);
    return { status: 200, body: attachment.bytes, headers: { 'Content-Type': attachment.contentType } };
  },
  'user.mailFolder.message.attachment_GetContent': (call) => MAIL_HANDLERS['user.message.attachment_GetContent']!(call),

  'user.message_move': (call) => moveOrCopy(call, false),
  'user.mailFolder.message_move': (call) => moveOrCopy(call, false),
  'user.message_copy': (call) => moveOrCopy(call, true),
  'user.mailFolder.message_copy': (call) => moveOrCopy(call, true),
  'user.message_send': send,
  'user.mailFolder.message_send': send,
  user_sendMail: sendMail,
  'user.message_createReply': createReply,
  'user.mailFolder.message_createReply': createReply,
  'user.message_CreateAttachment': createAttachment,
  'user.mailFolder.message_CreateAttachment': createAttachment,
  'user.message_DeleteAttachment': deleteAttachment,
  'user.mailFolder.message_DeleteAttachment': deleteAttachment,
  'user.message.attachment_createUploadSession': createUploadSession,
  'user.mailFolder.message.attachment_createUploadSession': createUploadSession,

  'user.mailFolder.message_delta': delta,
};
