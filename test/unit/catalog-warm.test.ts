// engine: any
// The v3 catalog compiles an operation's validators at first use; warmCatalog compiles them all
// (the server, after it listens), so a schema that cannot compile still shows, and stops it. So do
// the batch payload, manifest and event schemas (app.warm() warms them all).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { buildCatalog, warmCatalog } from '../../src/http/v3/catalog.ts';
import { payloadChecks } from '../../src/http/v3/payloads.ts';
import { manifestChecks } from '../../src/http/v3/manifest-schemas.ts';
import { EventCatalog } from '../../src/domain/events/catalog.ts';
import { loadSpec } from '../../src/app.ts';

const t = suite('v3 catalog: validators compiled at first use');

const spec = (bodySchema: object) => ({
  openapi: '3.1.0',
  info: { title: 't', version: '1.0.0' },
  paths: {
    '/things': {
      post: {
        operationId: 'createThing',
        requestBody: { content: { 'application/json': { schema: bodySchema } } },
        responses: { '201': { description: 'created' } },
      },
    },
  },
  components: { schemas: {} },
});

t('a good schema: built without compiling, then validates at first use', async () => {
  const [op] = buildCatalog(spec({ type: 'object', required: ['a'] }));
  assert.ok(op!.validateBody);
  assert.is(op!.validateBody!({ a: 1 }), true);
  assert.is(op!.validateBody!({}), false);
  await warmCatalog([op!]);
});

t('a schema that cannot compile: the build passes, warming fails', async () => {
  const catalog = buildCatalog(spec({ $ref: '#/components/schemas/Missing' }));
  assert.is(catalog.length, 1);
  try {
    await warmCatalog(catalog);
    assert.unreachable('warmCatalog must fail on a schema that does not compile');
  } catch (err: any) {
    assert.match(String(err.message), /Missing|resolve/i);
  }
});

/** The promise rejects with a message that names the unresolvable reference. */
async function fails(warm: () => Promise<void>, what: string) {
  try {
    await warm();
    assert.unreachable(`${what}: warming must fail on a schema that does not compile`);
  } catch (err: any) {
    assert.match(String(err.message), /Missing|resolve/i, what);
  }
}

t('batch payload, manifest and event schemas: the contract warms, a broken one fails', async () => {
  const real = loadSpec();
  await payloadChecks(real).warm();
  await manifestChecks(real).warm();
  await new EventCatalog().warm();
  const broken = spec({ type: 'object' }) as any;
  broken.components.schemas.BatchCreate = {
    type: 'object',
    'x-payload-schemas': { 'things.make': '#/components/schemas/Missing' },
  };
  broken.components.schemas.ManifestResource = {
    type: 'object',
    'x-properties-schemas': { thing: '#/components/schemas/Missing' },
  };
  // Built without compiling: nothing fails until the schemas are used or warmed.
  const payloads = payloadChecks(broken);
  const manifests = manifestChecks(broken);
  await fails(() => payloads.warm(), 'payloads');
  await fails(() => manifests.warm(), 'manifests');
  const events = new EventCatalog([
    {
      type: 'thing.made',
      version: '1',
      visibility: 'public',
      schema: { $ref: '#/$defs/Missing' },
    } as any,
  ]);
  await fails(() => events.warm(), 'events');
});

t.run();
