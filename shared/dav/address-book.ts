import type { GrantRecord } from '#shared/db/grants';
import { getSyncState } from '#shared/db/mail-sync';
import { InvalidRequestError } from '#shared/errors';
import type { CardDavContext } from '#shared/dav/contacts';
import { davClientOf, davRequestError, davSettingsOf } from '#shared/dav/session';

export const hasCardDav = (grant: GrantRecord) => davSettingsOf(grant).addressbook_home !== undefined;

/**
 * The address book a grant's contacts live in: the one its sync runs read (kept in its sync state),
 * else the first under its address book home.
 */
export async function cardDavContextOf(grant: GrantRecord): Promise<CardDavContext> {
  const home = davSettingsOf(grant).addressbook_home;
  if (!home)
    throw new InvalidRequestError(`Grant ${grant.id} has no CardDAV server: connect it with settings.carddav_url`);
  const client = await davClientOf(grant);
  const known = (await getSyncState(grant.id))?.dav?.address_book?.url;
  if (known) return { grant, client, addressBook: known };
  let listed;
  try {
    listed = await client.listCollections(home);
  } catch (error) {
    throw davRequestError(error, "The grant's CardDAV server");
  }
  const book = listed.find((c) => c.kind === 'addressbook');
  if (!book)
    throw new InvalidRequestError(`The grant's CardDAV server has no address book under ${new URL(home).pathname}`);
  return { grant, client, addressBook: book.url };
}
