// engine: any
// The v3 catalog compiles an operation's validators at first use; warmCatalog compiles them all
// (the server, after it listens), so a schema that cannot compile still shows, and stops it.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { buildCatalog, warmCatalog } from '../../src/http/v3/catalog.ts';

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

t.run();
