// The event catalog: spec/events/<type>/<version>.json, one JSON Schema of the payload (`data`)
// per type and version, with its visibility. An event is recorded in the current (highest)
// version of its type and checked against that schema, so what is published is what is sent.
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020Import, { type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { once, warmAll } from '../shared/once.ts';

const Ajv2020 = Ajv2020Import as unknown as typeof Ajv2020Import.default;
const addFormats = addFormatsImport as unknown as typeof addFormatsImport.default;

export const EVENTS_DIR = path.resolve(import.meta.dirname, '../../../spec/events');

export interface EventTypeEntry {
  type: string;
  version: string;
  visibility: 'public' | 'internal';
  description: string;
  /** Top-level keys of `data`. */
  payloadKeys: string[];
  /** The JSON Schema of `data`, as published. */
  schema: Record<string, unknown>;
}

const TYPE = /^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$/;
const VERSION = /^[1-9][0-9]*$/;

/** Reads every schema of the catalog, ordered by type then version. Throws on a malformed one. */
export function readEventCatalog(dir = EVENTS_DIR): EventTypeEntry[] {
  if (!fs.existsSync(dir)) return [];
  const out: EventTypeEntry[] = [];
  for (const type of fs.readdirSync(dir).sort()) {
    const folder = path.join(dir, type);
    if (!fs.statSync(folder).isDirectory()) continue;
    if (!TYPE.test(type)) throw new Error(`spec/events/${type}: not an event type name`);
    for (const file of fs.readdirSync(folder)) {
      const version = /^(.+)\.json$/.exec(file)?.[1];
      if (!version) continue;
      if (!VERSION.test(version)) throw new Error(`spec/events/${type}/${file}: bad version`);
      const schema = JSON.parse(fs.readFileSync(path.join(folder, file), 'utf8'));
      if (schema['x-event-type'] !== type || schema['x-event-version'] !== version)
        throw new Error(`spec/events/${type}/${file}: x-event-type/x-event-version disagree`);
      const visibility = schema['x-visibility'];
      if (visibility !== 'public' && visibility !== 'internal')
        throw new Error(`spec/events/${type}/${file}: x-visibility must be public or internal`);
      out.push({
        type,
        version,
        visibility,
        description: String(schema.description ?? ''),
        payloadKeys: Object.keys(schema.properties ?? {}),
        schema,
      });
    }
  }
  return out.sort((a, b) => a.type.localeCompare(b.type) || Number(a.version) - Number(b.version));
}

export class EventCatalog {
  private readonly current = new Map<string, EventTypeEntry>();
  private readonly validators = new Map<string, () => ValidateFunction>();
  readonly entries: EventTypeEntry[];

  constructor(entries: EventTypeEntry[] = readEventCatalog()) {
    this.entries = entries;
    const ajv = once(() => {
      const a = new Ajv2020({ allErrors: true, strict: false });
      addFormats(a);
      return a;
    });
    for (const e of entries) {
      const latest = this.current.get(e.type);
      if (!latest || Number(e.version) > Number(latest.version)) this.current.set(e.type, e);
      const { $schema: _ignored, ...schema } = e.schema;
      this.validators.set(
        `${e.type}@${e.version}`,
        once(() => ajv().compile(schema)),
      );
    }
  }

  /** Compiles every type's schema now (the server, after it listens). */
  warm(): Promise<void> {
    return warmAll(this.validators.values());
  }

  /** The version new events of this type are recorded in; undefined for an unknown type. */
  currentOf(type: string): EventTypeEntry | undefined {
    return this.current.get(type);
  }

  /** Published types (any version) that destinations may subscribe to. */
  publicTypes(): string[] {
    return [...this.current.values()].filter((e) => e.visibility === 'public').map((e) => e.type);
  }

  versions(): string[] {
    return [...new Set(this.entries.map((e) => e.version))].sort((a, b) => Number(a) - Number(b));
  }

  /** The schema's complaints about `data`, or null when it conforms. */
  problems(type: string, version: string, data: unknown): string | null {
    const validate = this.validators.get(`${type}@${version}`)?.();
    if (!validate) return `no schema for ${type} version ${version}`;
    if (validate(data)) return null;
    return (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
  }
}
