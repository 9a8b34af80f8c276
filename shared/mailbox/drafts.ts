import { randomUUID } from 'node:crypto';
import { attachmentRecords, bodyKey, uploadAttachments } from '#shared/mailbox/blobs';
import { putBlob } from '#shared/aws/mail-bucket';
import { removeContentsJob, removeContentsNow } from '#shared/mailbox/cleanup';
import { draftContentPlan, draftObject, requireDraft, requireMessage } from '#shared/mailbox/lookup';
import { normalAddress } from '#shared/mailbox/postings';
import { checkCustomHeaders, collectWithUploads, senderOf } from '#shared/mailbox/outgoing';
import { copyUpload, isUploaded, type UploadedAttachment } from '#shared/uploads/attachments';
import { BODY_INLINE_MAX } from '#shared/mailbox/store';
import { refreshThreadNow, threadRefreshJob } from '#shared/mailbox/thread-refresh';
import type { AttachmentRecord, DraftRecord, NewAttachment } from '#shared/mailbox/types';
import { words } from '#shared/mailbox/text';
import { env } from '#shared/config';
import { decodeBeforeCursor, encodeBeforeCursor } from '#shared/cursor';
import * as drafts from '#shared/db/drafts';
import { openUpload } from '#shared/db/uploads';
import type { GrantRecord } from '#shared/db/grants';
import { draftsOfGrant } from '#shared/db/keys';
import { VersionConflictError, listRecords } from '#shared/db/records';
import type { NamedItems } from '#shared/db/transact';
import { ConflictError, NotFoundError } from '#shared/errors';
import { countWithinBudget, jsonBytes } from '#shared/answer-limits';
import type { UploadedFile } from '#shared/uploaded-file';
import { newId, type DraftId } from '#shared/ids';
import { trackingOnCreate, trackingOnUpdate } from '#shared/mail/tracking';
import { renderStoredTemplate, requireSignature } from '#shared/templates/templates';
import { clock } from '#shared/time';
import type { CreateDraftBody, ListDraftsQuery, UpdateDraftBody } from '#schemas/mail';
import { addressList, keywordList } from '#shared/mailbox/filters';
import { metadataPair } from '#shared/mailbox/metadata';

/**
 * Drafts of an Agent Account: JSON or multipart, the create-only fields, tracking options under the
 * six hostname rules, templates rendered on create/update. Sending a draft (POST /drafts/{id}) is
 * shared/mailbox/draft-send.ts, a function of its own.
 */
const TRACKING_HOSTNAME = env.trackingHostname();
const LIST_BUDGET = 1000;

export { draftObject, requireDraft };

/**
 * Where a grant keeps its drafts besides the store: an IMAP grant's Drafts folder on its server
 * (shared/imap/drafts.ts). Each call is made once the draft's contents are uploaded and before the
 * store changes, so a refusal (thrown) leaves the store as it was; what it answers is committed with
 * the change.
 */
export interface DraftMirror {
  /** Puts a new draft (or the next version of `previous`) there: the record to store and the items to commit with it. */
  put(draft: DraftRecord, previous?: DraftRecord): Promise<{ draft: DraftRecord; items: NamedItems }>;
  /** Removes the draft there: the items to commit with its removal from the store. */
  remove(draft: DraftRecord): Promise<NamedItems>;
}

const unmirrored = async (draft: DraftRecord) => ({ draft, items: [] as NamedItems });

/** A scheduled send's draft (use_draft) changes only with its schedule: cancelling it removes the draft. */
export async function requireUnscheduledDraft(
  grant: GrantRecord,
  draftId: string,
  action: string,
): Promise<DraftRecord> {
  const draft = await requireDraft(grant, draftId);
  if (draft.schedule_id) {
    throw new ConflictError(
      `The draft belongs to scheduled message '${draft.schedule_id}' and cannot be ${action}; cancel it with DELETE /v3/grants/${grant.id}/messages/schedules/${draft.schedule_id} (the draft goes with it) and schedule it again`,
    );
  }
  return draft;
}

/**
 * Contents a draft write uploads (a large body, attachments), planned before anything is uploaded:
 * their keys are recorded as an upload first (shared/db/uploads.ts), so contents of a write that
 * does not commit are removed later, and the write's transaction commits them.
 */
interface StagedContents {
  body?: { body: string; body_key?: string; body_size: number };
  attachments?: AttachmentRecord[];
  keys: (string | undefined)[];
  upload: () => Promise<void>;
}

/**
 * `html` undefined: the body is kept; `attachments` undefined: they are kept. A large body goes to S3
 * under a key of its own for every write: concurrent updates of a draft never overwrite (or, losing
 * the version check, delete) the body the winner points to.
 */
function stageContents(
  grant: GrantRecord,
  id: DraftId,
  html: string | undefined,
  isPlaintext: boolean,
  /** Uploaded ones (attachment-uploads) are copied from their upload inside S3. */
  attachments: (NewAttachment | UploadedAttachment)[] | undefined,
): StagedContents {
  const staged: StagedContents = { keys: [], upload: async () => undefined };
  const uploads: (() => Promise<void>)[] = [];
  if (html !== undefined) {
    const size = Buffer.byteLength(html);
    if (size <= BODY_INLINE_MAX) staged.body = { body: html, body_size: size };
    else {
      const key = bodyKey(grant.id, `${id}.${randomUUID()}`);
      staged.body = { body: '', body_key: key, body_size: size };
      staged.keys.push(key);
      uploads.push(() => putBlob(key, html, isPlaintext ? 'text/plain; charset=utf-8' : 'text/html; charset=utf-8'));
    }
  }
  if (attachments) {
    const records = attachmentRecords(grant.id, attachments);
    staged.attachments = records;
    staged.keys.push(...records.map((r) => r.key));
    uploads.push(async () => {
      await Promise.all(
        records.map((r, i) => {
          const a = attachments[i]!;
          return isUploaded(a) ? copyUpload(a, r.key) : uploadAttachments([r], [a]);
        }),
      );
    });
  }
  staged.upload = async () => void (await Promise.all(uploads.map((u) => u())));
  return staged;
}

/** Records the staged contents as an upload, uploads them, and returns what commits them. */
async function uploadStaged(grant: GrantRecord, staged: StagedContents) {
  const commit = await openUpload(grant, staged.keys);
  await staged.upload();
  return commit;
}

/** The job that removes a draft's contents in S3, committed with the change that drops them. */
export const draftContentsRemoval = (grant: GrantRecord, draft: DraftRecord) =>
  removeContentsJob(grant, draft.id, { blobs: [draft.body_key, ...draft.attachments.map((a) => a.key)] });

/** A reply draft shows in its thread (`draft_ids`, `latest_draft_or_message`): recompute the thread. */
async function refreshDraftThread(grant: GrantRecord, draft: DraftRecord) {
  if (draft.thread_id) await refreshThreadNow(grant.id, draft.thread_id);
}

/** The thread refresh committed with a draft write (its draft postings change the thread). */
export const draftOutbox = (grant: GrantRecord, draft: DraftRecord) =>
  draft.thread_id ? [threadRefreshJob(grant, draft.thread_id)] : [];

export async function createDraft(
  grant: GrantRecord,
  body: CreateDraftBody,
  files: UploadedFile[],
  mirror?: DraftMirror,
) {
  const id = newId('draft');
  let { subject, body: html } = body;
  if (body.template)
    ({ subject, body: html } = await renderStoredTemplate(grant, body.template, { subject, body: html }));
  const from = senderOf(grant, body.from);
  const original = body.reply_to_message_id ? await requireMessage(grant, body.reply_to_message_id) : undefined;
  const tracking = trackingOnCreate(body.tracking_options, TRACKING_HOSTNAME);
  if (body.signature_id) await requireSignature(grant.id, body.signature_id);
  const staged = stageContents(
    grant,
    id,
    html ?? '',
    body.is_plaintext ?? false,
    await collectWithUploads(grant, body.attachments, files),
  );
  const uploaded = await uploadStaged(grant, staged);
  const now = clock.nowSeconds();
  const record: DraftRecord = {
    id,
    grant_id: grant.id,
    ...(original ? { thread_id: original.thread_id, reply_to_message_id: original.id } : {}),
    subject: subject ?? '',
    from: [from],
    to: body.to ?? [],
    cc: body.cc ?? [],
    bcc: body.bcc ?? [],
    reply_to: body.reply_to ?? [],
    ...staged.body!,
    is_plaintext: body.is_plaintext ?? false,
    starred: body.starred ?? false,
    attachments: staged.attachments!,
    metadata: body.metadata ?? {},
    custom_headers: checkCustomHeaders(body.custom_headers),
    ...(body.signature_id ? { signature_id: body.signature_id } : {}),
    ...(body.template ? { template: body.template as DraftRecord['template'] } : {}),
    tracking_options: tracking,
    created_at: now,
    updated_at: now,
    version: 1,
  };
  const mirrored = await (mirror ? mirror.put(record) : unmirrored(record));
  await drafts.insertDraft(mirrored.draft, draftOutbox(grant, mirrored.draft), [...uploaded, ...mirrored.items]);
  await refreshDraftThread(grant, mirrored.draft);
  return draftObject(mirrored.draft);
}

export async function updateDraft(
  grant: GrantRecord,
  draftId: string,
  body: UpdateDraftBody,
  files: UploadedFile[],
  mirror?: DraftMirror,
) {
  const current = await requireUnscheduledDraft(grant, draftId, 'updated');
  let { subject, body: html } = body;
  if (body.template)
    ({ subject, body: html } = await renderStoredTemplate(grant, body.template, { subject, body: html }));
  const next: DraftRecord = {
    ...current,
    ...(subject !== undefined ? { subject } : {}),
    ...(body.from ? { from: [senderOf(grant, body.from)] } : {}),
    ...(body.to ? { to: body.to } : {}),
    ...(body.cc ? { cc: body.cc } : {}),
    ...(body.bcc ? { bcc: body.bcc } : {}),
    ...(body.reply_to ? { reply_to: body.reply_to } : {}),
    ...(body.starred !== undefined ? { starred: body.starred } : {}),
    ...(body.metadata ? { metadata: body.metadata } : {}),
    ...(body.template ? { template: body.template as DraftRecord['template'] } : {}),
    tracking_options: trackingOnUpdate(current.tracking_options, body.tracking_options, TRACKING_HOSTNAME),
    updated_at: clock.nowSeconds(),
    version: current.version + 1,
  };
  // Attachments are a nested list: given means replaced, absent means kept.
  const replacedAttachments = body.attachments !== undefined || files.length > 0;
  const staged = stageContents(
    grant,
    current.id,
    html,
    next.is_plaintext,
    replacedAttachments ? await collectWithUploads(grant, body.attachments, files) : undefined,
  );
  if (staged.body) {
    next.body = staged.body.body;
    next.body_size = staged.body.body_size;
    if (staged.body.body_key) next.body_key = staged.body.body_key;
    else delete next.body_key;
  }
  if (staged.attachments) next.attachments = staged.attachments;
  const uploaded = await uploadStaged(grant, staged);
  // The contents this version replaces are removed by a job committed with it.
  const replaced = removeContentsJob(grant, current.id, {
    blobs: [
      ...(replacedAttachments ? current.attachments.map((a) => a.key) : []),
      current.body_key !== next.body_key ? current.body_key : undefined,
    ],
  });
  const mirrored = await (mirror ? mirror.put(next, current) : unmirrored(next));
  try {
    await drafts.replaceDraft(current, mirrored.draft, [replaced], [...uploaded, ...mirrored.items]);
  } catch (error) {
    if (error instanceof VersionConflictError)
      throw new ConflictError('The draft was changed by another request; fetch it again and retry');
    throw error;
  }
  await removeContentsNow(replaced);
  return draftObject(mirrored.draft);
}

export async function deleteDraft(grant: GrantRecord, draftId: string, mirror?: DraftMirror): Promise<void> {
  const draft = await requireUnscheduledDraft(grant, draftId, 'deleted');
  const removal = draftContentsRemoval(grant, draft);
  const items = mirror ? await mirror.remove(draft) : [];
  if (!(await drafts.removeDraft(draft, undefined, [...draftOutbox(grant, draft), removal], items)))
    throw new NotFoundError(`Draft '${draft.id}' not found`);
  await refreshDraftThread(grant, draft);
  await removeContentsNow(removal);
}

function draftMatches(
  d: DraftRecord,
  q: ListDraftsQuery,
  filters: {
    subject?: string[];
    any?: string[];
    to?: string[];
    cc?: string[];
    bcc?: string[];
    metadata?: { key: string; value: string };
  },
): boolean {
  const has = (list: { email: string }[], wanted: string[]) =>
    list.some((p) => wanted.includes(normalAddress(p.email)));
  if (filters.metadata && d.metadata[filters.metadata.key] !== filters.metadata.value) return false;
  if (filters.subject) {
    const subject = new Set(words(d.subject));
    if (!filters.subject.every((w) => subject.has(w))) return false;
  }
  if (filters.any && !has([...d.from, ...d.to, ...d.cc, ...d.bcc], filters.any)) return false;
  if (filters.to && !has(d.to, filters.to)) return false;
  if (filters.cc && !has(d.cc, filters.cc)) return false;
  if (filters.bcc && !has(d.bcc, filters.bcc)) return false;
  if (q.starred !== undefined && d.starred !== q.starred) return false;
  if (q.thread_id !== undefined && d.thread_id !== q.thread_id) return false;
  if (q.has_attachment !== undefined && d.attachments.length > 0 !== q.has_attachment) return false;
  return true;
}

/** Drafts newest first; filters are checked on the drafts themselves (a mailbox holds few drafts). */
export async function listDrafts(grant: GrantRecord, query: ListDraftsQuery, limit: number) {
  const filters = {
    ...(query.subject !== undefined ? { subject: keywordList('subject', query.subject) } : {}),
    ...(query.any_email !== undefined ? { any: addressList('any_email', query.any_email) } : {}),
    ...(query.to !== undefined ? { to: addressList('to', query.to) } : {}),
    ...(query.cc !== undefined ? { cc: addressList('cc', query.cc) } : {}),
    ...(query.bcc !== undefined ? { bcc: addressList('bcc', query.bcc) } : {}),
    ...(query.metadata_pair !== undefined ? { metadata: metadataPair(query.metadata_pair) } : {}),
  };
  let before = query.page_token ? decodeBeforeCursor(query.page_token, 'drafts', 'draft') : undefined;
  const found: DraftRecord[] = [];
  let evaluated = 0;
  let exhausted = false;
  while (found.length <= limit && evaluated < LIST_BUDGET) {
    const page = await listRecords<DraftRecord>(draftsOfGrant(grant.id).pk, { limit: 100, before });
    evaluated += page.items.length;
    found.push(...page.items.filter((d) => draftMatches(d, query, filters)));
    if (!page.last) {
      exhausted = true;
      break;
    }
    before = page.last;
  }
  const candidates = found.slice(0, limit);
  // A page ends early rather than outgrow an answer: planned from recorded sizes (nothing large is
  // read from S3 only to be left out), then measured.
  const plans = candidates.map((d) => draftContentPlan(d));
  const planned = candidates.slice(0, countWithinBudget(plans.map((p) => p.estimate)));
  const views = await Promise.all(planned.map((d, i) => draftObject(d, plans[i])));
  const items = views.slice(0, countWithinBudget(views.map(jsonBytes)));
  const cut = items.length < candidates.length;
  const next = cut || found.length > limit ? items.at(-1)!.id : exhausted ? undefined : before;
  return { items, nextCursor: next ? encodeBeforeCursor('drafts', next) : undefined };
}
