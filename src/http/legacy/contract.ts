// The legacy generations' own OpenAPI documents (spec/legacy/v1.yaml, v2.yaml): served as JSON at
// /api/v1/openapi.json and /api/v2/openapi.json, and the source of every request-body rule, so the
// documented schema and the checks the server makes cannot drift apart.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import type { ValidateFunction } from 'ajv';
import { newAjv } from '../v3/catalog.ts';
import { check, rejectNul } from '../v3/validation.ts';
import type { Locale } from '../../i18n/messages.ts';
import type { Generation } from './render.ts';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export class LegacyContract {
  /** The document as served (JSON text, built once). */
  readonly json: string;
  /** Each operation's body check, compiled on first use (see the v3 catalog's `lazy`). */
  private readonly bodies = new Map<string, () => ValidateFunction>();
  /** Operations whose document says `requestBody.required`: no body (or `null`) is a bad one. */
  private readonly required = new Set<string>();
  readonly doc: any;

  constructor(doc: any) {
    this.doc = doc;
    this.json = JSON.stringify(doc);
    let ajv: ReturnType<typeof newAjv> | undefined;
    for (const [p, item] of Object.entries<any>(doc.paths ?? {})) {
      for (const m of METHODS) {
        const op = item[m];
        if (!op?.requestBody) continue;
        const esc = p.replace(/~/g, '~0').replace(/\//g, '~1');
        const ref = `spec#/paths/${esc}/${m}/requestBody/content/application~1json/schema`;
        let compiled: ValidateFunction | undefined;
        this.bodies.set(
          op.operationId,
          () => (compiled ??= (ajv ??= newAjv(false, doc)).compile({ $ref: ref })),
        );
        if (op.requestBody.required) this.required.add(op.operationId);
      }
    }
  }

  /**
   * Checks a parsed body against the operation's request schema: 422 `validation_failed` (or
   * `unknown_field` where the schema closes an object) with details; U+0000 is refused everywhere,
   * as PostgreSQL cannot store it.
   */
  checkBody(operationId: string, body: unknown, locale: Locale): unknown {
    const validate = this.bodies.get(operationId)?.();
    if (!validate) throw new Error(`no request schema for ${operationId}`);
    // A missing body of an operation that requires one is checked as `null`, like v3's, so it
    // is the same 422 as `[]` or `null` (it was read as `{}`, a 200 that changed nothing).
    if (body === undefined) {
      if (!this.required.has(operationId)) return {};
      body = null;
    }
    rejectNul(body, 'field', locale);
    check(validate, body, 'field', locale);
    return body;
  }
}

const cache = new Map<Generation, LegacyContract>();

export function legacyContract(generation: Generation): LegacyContract {
  let c = cache.get(generation);
  if (!c) {
    const file = path.resolve(import.meta.dirname, `../../../spec/legacy/${generation}.yaml`);
    c = new LegacyContract(YAML.parse(fs.readFileSync(file, 'utf8')));
    cache.set(generation, c);
  }
  return c;
}
