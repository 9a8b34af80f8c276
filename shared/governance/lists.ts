import type { CreateListBody, ListItemsBody, UpdateListBody } from '#schemas/governance';
import { decodeCursor, encodeCursor } from '#shared/cursor';
import * as db from '#shared/db/governance';
import type { ListRecord } from '#shared/db/governance';
import { itemsOfList, listsOfApplication } from '#shared/db/keys';
import { InvalidRequestError, NotFoundError } from '#shared/errors';
import { newId, parseId, type ApplicationId, type ListId } from '#shared/ids';
import { clock } from '#shared/time';
import { normalizeValue } from '#shared/governance/values';

/**
 * Lists: typed collections of domains, top-level domains or addresses that rules reference with
 * `in_list`. Values are normalized and validated by the list's type; a request with any invalid
 * value is refused whole, naming each. Items live one per key, so membership is a key lookup and a
 * list of 100,000 values costs a decision what a list of 10 does.
 */
export const listView = (l: ListRecord) => ({
  id: l.id,
  object: 'list' as const,
  name: l.name,
  ...(l.description !== undefined ? { description: l.description } : {}),
  type: l.type,
  items_count: l.items_count,
  application_id: l.application_id,
  created_at: l.created_at,
  updated_at: l.updated_at,
});

export async function requireList(appId: ApplicationId, listId: string): Promise<ListRecord> {
  const id = parseId('list', listId);
  const list = id ? await db.getList(appId, id) : undefined;
  if (!list) throw new NotFoundError(`List '${listId}' not found`);
  return list;
}

export async function createList(appId: ApplicationId, body: CreateListBody) {
  const now = clock.nowSeconds();
  const record: ListRecord = {
    id: newId('list'),
    application_id: appId,
    name: body.name,
    ...(body.description !== undefined ? { description: body.description } : {}),
    type: body.type,
    items_count: 0,
    created_at: now,
    updated_at: now,
  };
  await db.insertList(record);
  return listView(record);
}

export async function listLists(appId: ApplicationId, query: { page_token?: string }, limit: number) {
  const start = query.page_token ? decodeCursor(query.page_token, listsOfApplication(appId)) : undefined;
  const page = await db.listLists(appId, { limit, start });
  return { items: page.items.map(listView), nextCursor: page.next ? encodeCursor(page.next) : undefined };
}

export async function updateList(appId: ApplicationId, listId: string, body: UpdateListBody) {
  const list = await requireList(appId, listId);
  if (body.type !== undefined && body.type !== list.type) {
    throw new InvalidRequestError(
      `'type' cannot change after a list is created: this list holds ${list.type} values; create another list instead`,
    );
  }
  const changes = {
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.description !== undefined ? { description: body.description } : {}),
  };
  if (Object.keys(changes).length && !(await db.updateList(appId, list.id, changes, clock.nowSeconds())))
    throw new NotFoundError(`List '${listId}' not found`);
  return listView((await db.getList(appId, list.id)) ?? list);
}

/** Deletes the list at once (rules stop matching it with the next message); its items go in the background. */
export async function deleteList(appId: ApplicationId, listId: string): Promise<void> {
  const list = await requireList(appId, listId);
  const job = {
    job: { kind: 'purge-list' as const, application_id: appId, list_id: list.id },
    id: newId('job'),
    applicationId: appId,
  };
  if (!(await db.deleteList(appId, list.id, [job]))) throw new NotFoundError(`List '${listId}' not found`);
}

/** The normalized, distinct values of a request, or one 400 naming every invalid value and why. */
function normalizedValues(list: ListRecord, raw: string[]): string[] {
  const problems: string[] = [];
  const values = new Set<string>();
  raw.forEach((value, i) => {
    const result = normalizeValue(list.type, value);
    if (result.ok) values.add(result.value);
    else
      problems.push(
        `items[${i}] ${JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value)}: ${result.why}`,
      );
  });
  if (problems.length) {
    throw new InvalidRequestError(
      `Nothing was changed: ${problems.length} value(s) are not valid ${list.type} values for this list: ${problems.join('; ')}`,
    );
  }
  return [...values];
}

export async function addItems(appId: ApplicationId, listId: string, body: ListItemsBody) {
  const list = await requireList(appId, listId);
  const values = normalizedValues(list, body.items);
  const present = await db.storedValues(list.id, values);
  const now = clock.nowSeconds();
  await change(
    list,
    values.filter((v) => !present.has(v)),
    1,
    now,
  );
  return listView((await db.getList(appId, list.id)) ?? list);
}

export async function removeItems(appId: ApplicationId, listId: string, body: ListItemsBody) {
  const list = await requireList(appId, listId);
  const values = normalizedValues(list, body.items);
  const present = await db.storedValues(list.id, values);
  await change(
    list,
    values.filter((v) => present.has(v)),
    -1,
    clock.nowSeconds(),
  );
  return listView((await db.getList(appId, list.id)) ?? list);
}

async function change(list: ListRecord, values: string[], sign: 1 | -1, now: number) {
  try {
    await db.changeItems(list.application_id, list.id, values, sign, now, (value) => ({
      id: newId('listItem'),
      list_id: list.id,
      value,
      created_at: now,
    }));
  } catch (error) {
    if (error instanceof db.ListGoneError) throw new NotFoundError(`List '${list.id}' not found`);
    throw error;
  }
}

export async function listItems(appId: ApplicationId, listId: string, query: { page_token?: string }, limit: number) {
  const list = await requireList(appId, listId);
  const start = query.page_token ? decodeCursor(query.page_token, { pk: itemsOfList(list.id as ListId) }) : undefined;
  const page = await db.listItems(list.id, { limit, start });
  return {
    items: page.items.map((i) => ({ id: i.id, list_id: i.list_id, value: i.value, created_at: i.created_at })),
    nextCursor: page.next ? encodeCursor(page.next) : undefined,
  };
}
