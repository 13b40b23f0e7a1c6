// A manifest's entries are checked against the contract: the entry's own schema
// (ManifestResource) and, for its properties, the create schema its type names in
// `x-properties-schemas`, compiled at first use like the request bodies. A type's write permissions are
// those of the route each action goes through: the operation whose body is that create schema,
// and the PATCH and DELETE of the item path below it (a type without DELETE is removed by its
// PATCH, with that operation's conditional permissions: a delivery is archived).
import type { ValidateFunction } from 'ajv';
import type { Action, ManifestSchemas, PlanType } from '../../domain/plans/types.ts';
import type { Locale } from '../../i18n/messages.ts';
import { newAjv } from './catalog.ts';
import { detailsOf } from './validation.ts';
import { lazyMap, once, warmAll } from '../../domain/shared/once.ts';

export type ManifestChecks = ((locale: Locale) => ManifestSchemas) & {
  /** Compiles the entry schema and every type's properties schema now (the server, after it listens). */
  warm(): Promise<void>;
};

export function manifestChecks(spec: any): ManifestChecks {
  const resource = spec.components?.schemas?.ManifestResource ?? {};
  const refs: Record<string, string> = resource['x-properties-schemas'] ?? {};
  const ajv = once(() => newAjv(false, spec));
  const entry = once(() => ajv().compile({ $ref: 'spec#/components/schemas/ManifestResource' }));
  const properties = lazyMap<string, ValidateFunction>(
    Object.entries(refs).map(([type, ref]) => [type, () => ajv().compile({ $ref: 'spec' + ref })]),
  );
  const permissions = new Map<string, Record<Action, string[]>>();
  const paths: Record<string, any> = spec.paths ?? {};
  for (const [type, ref] of Object.entries(refs))
    for (const [path, item] of Object.entries(paths)) {
      const create = item?.post;
      if (create?.requestBody?.content?.['application/json']?.schema?.$ref !== ref) continue;
      const one = Object.entries(paths).find(
        ([p]) => p.startsWith(`${path}/{`) && !p.slice(path.length + 1).includes('/'),
      )?.[1];
      const of = (op: any): string[] => op?.['x-permissions'] ?? [];
      const patch = [...of(one?.patch), ...(one?.patch?.['x-permissions-conditional'] ?? [])];
      permissions.set(type, {
        create: of(create),
        unchanged: of(create),
        update: of(one?.patch),
        delete: one?.delete ? of(one.delete) : patch,
      });
    }
  const checks = (locale: Locale): ManifestSchemas => ({
    entry(value, at) {
      const validate = entry();
      return validate(value) ? [] : detailsOf(validate, 'field', locale, at);
    },
    properties(type: PlanType, value, at) {
      const validate = properties.get(type)?.();
      if (!validate) return [{ field: at, code: 'unsupported_resource', message: type }];
      return validate(value) ? [] : detailsOf(validate, 'field', locale, at);
    },
    permissions: (type: PlanType, action: Action = 'create') =>
      permissions.get(type)?.[action] ?? [],
  });
  return Object.assign(checks, { warm: () => warmAll([entry, ...properties.values()]) });
}
