// A manifest's entries are checked against the contract: the entry's own schema
// (ManifestResource) and, for its properties, the create schema its type names in
// `x-properties-schemas`, compiled once like the request bodies. A type's write permissions are
// the x-permissions of the operation whose body is that create schema.
import type { ValidateFunction } from 'ajv';
import type { ManifestSchemas, PlanType } from '../../domain/plans/types.ts';
import type { Locale } from '../../i18n/messages.ts';
import { newAjv } from './catalog.ts';
import { detailsOf } from './validation.ts';

export type ManifestChecks = (locale: Locale) => ManifestSchemas;

export function manifestChecks(spec: any): ManifestChecks {
  const resource = spec.components?.schemas?.ManifestResource ?? {};
  const refs: Record<string, string> = resource['x-properties-schemas'] ?? {};
  const ajv = newAjv(false, spec);
  const entry = ajv.compile({ $ref: 'spec#/components/schemas/ManifestResource' });
  const properties = new Map<string, ValidateFunction>(
    Object.entries(refs).map(([type, ref]) => [type, ajv.compile({ $ref: 'spec' + ref })]),
  );
  const permissions = new Map<string, string[]>();
  for (const [type, ref] of Object.entries(refs))
    for (const item of Object.values<any>(spec.paths ?? {}))
      for (const op of Object.values<any>(item))
        if (op?.requestBody?.content?.['application/json']?.schema?.$ref === ref)
          permissions.set(type, op['x-permissions'] ?? []);
  return (locale) => ({
    entry(value, at) {
      return entry(value) ? [] : detailsOf(entry, 'field', locale, at);
    },
    properties(type: PlanType, value, at) {
      const validate = properties.get(type);
      if (!validate) return [{ field: at, code: 'unsupported_resource', message: type }];
      return validate(value) ? [] : detailsOf(validate, 'field', locale, at);
    },
    permissions: (type: PlanType) => permissions.get(type) ?? [],
  });
}
