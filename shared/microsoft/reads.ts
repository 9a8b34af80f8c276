import { invalidPageToken } from '#shared/cursor';
import { NotFoundError } from '#shared/errors';
import { GraphGoneError, GraphNotFoundError, type GraphClient } from '#shared/microsoft/client';
import { GRAPH_ATTACHMENT_SELECT, type GraphAttachment, type GraphMessage } from '#shared/microsoft/graph-message';
import type { GraphListing } from '#shared/microsoft/graph-query';

/** Reads of a mailbox's messages that messages, threads, drafts and the mail changes share. */

export const messagePath = (client: GraphClient, id: string) => `${client.mailbox}/messages/${encodeURIComponent(id)}`;

/** A message's attachments (metadata only, never their bytes), every page. */
export async function attachmentsOf(client: GraphClient, id: string): Promise<GraphAttachment[]> {
  const found: GraphAttachment[] = [];
  for await (const page of client.pages<GraphAttachment>({
    path: `${messagePath(client, id)}/attachments`,
    query: { $select: GRAPH_ATTACHMENT_SELECT },
    batch: true,
  }))
    found.push(...page.value);
  return found;
}

/**
 * Whether a Graph link continues a message listing of this client's mailbox (all messages, or one
 * folder's): a page token is not signed, and must never make us read anything else (the client
 * follows a link only on its own API base).
 */
export function isMessageListing(client: GraphClient, link: string): boolean {
  let path: string;
  try {
    path = new URL(link).pathname;
  } catch {
    return false;
  }
  const mailbox = client.mailbox.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${mailbox}/(mailFolders(/[^/]+|\\('[^/]+'\\))/)?messages$`, 'i').test(path);
}

/**
 * One page of a message listing: the first (our filters as Graph's query, `$top` = limit, `select`ed)
 * or the one a checked link continues (a link Graph no longer follows is an invalid page token).
 */
export async function messageListingPage(
  client: GraphClient,
  from: GraphListing | string,
  limit: number,
  select: readonly string[],
) {
  if (typeof from === 'string')
    try {
      return await client.page<GraphMessage>(from);
    } catch (error) {
      // Not on the API base, or Graph no longer knows where it was.
      if (error instanceof GraphGoneError) throw invalidPageToken();
      throw error;
    }
  const collection = from.folder
    ? `${client.mailbox}/mailFolders/${encodeURIComponent(from.folder)}/messages`
    : `${client.mailbox}/messages`;
  try {
    return await client.page<GraphMessage>({
      path: collection,
      query: {
        $top: limit,
        $select: select,
        ...(from.filter !== undefined ? { $filter: from.filter } : {}),
        ...(from.search !== undefined ? { $search: from.search } : {}),
      },
    });
  } catch (error) {
    if (error instanceof GraphNotFoundError && from.folder)
      throw new NotFoundError(`No folder '${from.folder}' in this grant's mailbox`);
    throw error;
  }
}
