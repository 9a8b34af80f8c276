import * as db from '#shared/db/scheduling';
import type { ConfigurationRecord, LegacySlugItem } from '#shared/db/scheduling';
import { clock } from '#shared/time';

/**
 * The upgrade to slugs unique across applications (`npm run admin -- migrate-slugs`, once, after
 * deploying this version; running it again does nothing more).
 *
 * Before, a slug was unique within an application only, and a booking page URL named by a slug that
 * several applications used answered 400. Now one item per slug says which configuration holds it.
 * Each slug of the old scheme moves over: a slug one configuration used keeps its booking page; a
 * slug several applications used goes to the oldest configuration (the first to publish the link),
 * and the others lose their slug (their pages were already ambiguous: they keep working by
 * configuration ID), reported so that their owners can choose another.
 */
export interface SlugMigration {
  /** Slugs now held deployment-wide, with their configuration. */
  kept: { slug: string; application_id: string; configuration_id: string }[];
  /** Configurations that lost a slug another application's configuration kept. */
  cleared: { slug: string; application_id: string; configuration_id: string; kept_by: string }[];
  /** Old items of configurations that no longer exist or no longer use the slug, removed. */
  stale: number;
}

const ATTEMPTS = 5;

export async function migrateSlugs(): Promise<SlugMigration> {
  const result: SlugMigration = { kept: [], cleared: [], stale: 0 };
  const bySlug = new Map<string, LegacySlugItem[]>();
  for (const item of await db.legacySlugItems()) bySlug.set(item.slug, [...(bySlug.get(item.slug) ?? []), item]);
  for (const [slug, items] of bySlug) {
    for (let attempt = 1; ; attempt++) {
      const outcome = await migrateSlug(slug, items);
      if (outcome) {
        if (outcome.keeper)
          result.kept.push({
            slug,
            application_id: outcome.keeper.application_id,
            configuration_id: outcome.keeper.id,
          });
        for (const other of outcome.others)
          result.cleared.push({
            slug,
            application_id: other.application_id,
            configuration_id: other.id,
            kept_by: outcome.holder!,
          });
        result.stale += outcome.stale;
        break;
      }
      // A configuration changed meanwhile: read it again.
      if (attempt === ATTEMPTS) throw new Error(`slug '${slug}' kept changing during the migration; run it again`);
    }
  }
  return result;
}

async function migrateSlug(slug: string, items: readonly LegacySlugItem[]) {
  const ids = [...new Set(items.map((i) => i.configuration_id))];
  const records = (await Promise.all(ids.map((id) => db.getConfiguration(id)))).filter(
    (r): r is ConfigurationRecord => r?.slug === slug,
  );
  const stale = ids.length - records.length;
  const owner = await db.slugOwner(slug);
  // A configuration that already holds the slug keeps it; otherwise the oldest that uses it.
  const holder =
    owner?.configuration_id ??
    [...records].sort((a, b) => a.created_at - b.created_at || a.id.localeCompare(b.id))[0]?.id;
  const keeper = owner ? undefined : records.find((r) => r.id === holder);
  const others = records.filter((r) => r.id !== holder);
  const done = await db.adoptLegacySlug(slug, keeper, others, items, clock.nowSeconds());
  return done ? { keeper, others, holder, stale } : undefined;
}
