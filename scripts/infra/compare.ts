import type { ServerlessConfig } from '../local-stack/serverless-config';

/**
 * A configuration reduced to what deploys (comments, key order, statement grouping and list order
 * dropped), so two configurations can be compared: resources, functions with their events, and each
 * role's permissions as `action resource [condition]` lines.
 */
export interface InfraSummary {
  sections: Record<string, unknown>;
  resources: Record<string, unknown>;
  functions: Record<string, Record<string, unknown>>;
  trust: Record<string, unknown>;
  permissions: Record<string, string[]>;
}

/** JSON with object keys sorted: equal values, equal text. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

interface Statement {
  Effect: string;
  Action: string | string[];
  Resource: unknown;
  Condition?: unknown;
}

export function summarize(config: ServerlessConfig): InfraSummary {
  const all = config.resources.Resources;
  const roles = new Set(Object.values(config.functions).map((fn) => fn.role!));
  const resources = Object.fromEntries(Object.entries(all).filter(([id]) => !roles.has(id)));
  const permissions: Record<string, string[]> = {};
  const trust: Record<string, unknown> = {};
  for (const role of roles) {
    const properties = all[role]!.Properties as {
      AssumeRolePolicyDocument: unknown;
      Policies: { PolicyDocument: { Statement: Statement[] } }[];
    };
    trust[role] = properties.AssumeRolePolicyDocument;
    const lines = properties.Policies.flatMap((p) => p.PolicyDocument.Statement).flatMap((s) =>
      [s.Action]
        .flat()
        .flatMap((action) =>
          [s.Resource]
            .flat()
            .map(
              (resource) =>
                `${s.Effect} ${action} ${canonical(resource)}${s.Condition ? ` ${canonical(s.Condition)}` : ''}`,
            ),
        ),
    );
    permissions[role] = [...new Set(lines)].sort();
  }
  const functions = Object.fromEntries(
    Object.entries(config.functions).map(([name, fn]) => {
      const { events, ...rest } = fn as { events?: unknown[] };
      return [name, { ...rest, events: (events ?? []).map(canonical).sort() }];
    }),
  );
  const { functions: _functions, resources: _resources, ...sections } = config as unknown as Record<string, unknown>;
  return {
    sections: {
      ...sections,
      ...Object.fromEntries(
        (['Parameters', 'Conditions', 'Outputs'] as const).map((key) => [
          key,
          (config.resources as Record<string, unknown>)[key],
        ]),
      ),
    },
    resources,
    functions,
    trust,
    permissions,
  };
}

/** What `after` has that `before` has not, and the reverse, as sorted lines `<where> <what>`. */
export function differences(before: InfraSummary, after: InfraSummary): { added: string[]; removed: string[] } {
  const lines = (s: InfraSummary) =>
    new Set([
      ...Object.entries(s.sections).map(([key, value]) => `section ${key} ${canonical(value)}`),
      ...Object.entries(s.resources).map(([id, value]) => `resource ${id} ${canonical(value)}`),
      ...Object.entries(s.functions).flatMap(([name, fn]) => [
        ...Object.entries(fn)
          .filter(([key]) => key !== 'events')
          .map(([key, value]) => `function ${name} ${key} ${canonical(value)}`),
        ...(fn.events as string[]).map((event) => `function ${name} event ${event}`),
      ]),
      ...Object.entries(s.trust).map(([role, value]) => `trust ${role} ${canonical(value)}`),
      ...Object.entries(s.permissions).flatMap(([role, grants]) =>
        grants.map((grant) => `permission ${role} ${grant}`),
      ),
    ]);
  const a = lines(before);
  const b = lines(after);
  return { added: [...b].filter((l) => !a.has(l)).sort(), removed: [...a].filter((l) => !b.has(l)).sort() };
}
