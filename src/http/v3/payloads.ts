// Batch item payloads are checked against the schema the contract names for their type
// (`x-payload-schemas` of BatchCreate), compiled at first use like the request bodies.
import type { ValidateFunction } from 'ajv';
import type { PayloadCheck } from '../../domain/operations/service.ts';
import type { Locale } from '../../i18n/messages.ts';
import { newAjv } from './catalog.ts';
import { detailsOf } from './validation.ts';
import { lazyMap, once, warmAll } from '../../domain/shared/once.ts';

export type PayloadChecks = ((locale: Locale) => PayloadCheck) & {
  /** Compiles every payload schema now (the server, after it listens). */
  warm(): Promise<void>;
};

export function payloadChecks(spec: any): PayloadChecks {
  const refs: Record<string, string> =
    spec.components?.schemas?.BatchCreate?.['x-payload-schemas'] ?? {};
  const ajv = once(() => newAjv(false, spec));
  const validators = lazyMap<string, ValidateFunction>(
    Object.entries(refs).map(([type, ref]) => [type, () => ajv().compile({ $ref: 'spec' + ref })]),
  );
  const checks =
    (locale: Locale): PayloadCheck =>
    (type, payload, at) => {
      const validate = validators.get(type)?.();
      if (!validate || validate(payload)) return [];
      return detailsOf(validate, 'field', locale, at);
    };
  return Object.assign(checks, { warm: () => warmAll(validators.values()) });
}
