// The event catalog (spec/events/<type>/<version>.json) as the OpenAPI 3.1 `webhooks` section: one
// entry per type and version, `<type>.v<version>`, whose request body is the event envelope with
// that version's `data`. scripts/generate.ts adds it to the served document (generated/), and a
// release snapshot carries it, so `contract:diff` sees a published event schema change.
import path from 'node:path';
import { stringify } from 'yaml';
import { readEventCatalog, type EventTypeEntry } from '../domain/events/catalog.ts';

type Obj = Record<string, unknown>;

export const webhookKey = (type: string, version: string) => `${type}.v${version}`;

/** Where the catalog of a tree lives (the release tooling may run on a copy). */
export const eventsDir = (root: string) => path.join(root, 'spec/events');

function entryOf(e: EventTypeEntry): Obj {
  const { $schema: _s, title: _t, description, ...data } = e.schema;
  return {
    post: {
      summary: `${e.type} (version ${e.version})`,
      description: String(description ?? ''),
      'x-event-type': e.type,
      'x-event-version': e.version,
      'x-visibility': e.visibility,
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: {
              type: 'object',
              additionalProperties: false,
              required: ['object', 'id', 'type', 'version', 'created_at', 'data'],
              properties: {
                object: { type: 'string', const: 'event' },
                id: { type: 'string', pattern: '^[1-9][0-9]{0,17}$' },
                type: { type: 'string', const: e.type },
                version: { type: 'string', const: e.version },
                created_at: { type: 'string', format: 'date-time' },
                data,
              },
            },
          },
        },
      },
      responses: {
        '2XX': { description: 'Received. Anything else (or no answer within 15 s) is retried.' },
        '410': { description: 'Gone: the webhook is disabled and nothing more is sent.' },
      },
    },
  };
}

/** The `webhooks` section for a catalog. */
export function eventWebhooks(entries: EventTypeEntry[]): Obj {
  return Object.fromEntries(entries.map((e) => [webhookKey(e.type, e.version), entryOf(e)]));
}

/** The document with the catalog of `dir` as its `webhooks` section (a copy). */
export function withEventWebhooks<T extends Obj>(doc: T, dir: string): T {
  const entries = readEventCatalog(dir);
  if (entries.length === 0) return doc;
  return { ...doc, webhooks: eventWebhooks(entries) };
}

/** A release snapshot's text: the contract's YAML with the catalog appended as `webhooks`. */
export function withEventWebhooksText(text: string, dir: string): string {
  const entries = readEventCatalog(dir);
  if (entries.length === 0) return text;
  const section = stringify({ webhooks: eventWebhooks(entries) }, { lineWidth: 0 });
  return `${text.trimEnd()}\n${section}`;
}
