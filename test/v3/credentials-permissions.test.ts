// Permission names are the contract's closed list (every x-permissions and
// x-permissions-conditional, plus `*`): a typo is refused on the field when the credential is
// made, with the nearest name, instead of failing later as permission_denied.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, newKey, type Booted } from '../helpers/app.ts';
import { permissions } from '../../generated/operations.ts';

const t = suite<{ b: Booted }>('credential permissions');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

t('the closed list holds every x-permissions and the conditional deliveries.archive', () => {
  for (const p of ['users.read', 'users.write', 'operations.manage', 'deliveries.archive'])
    assert.ok(permissions.includes(p), p);
  assert.not.ok(permissions.includes('*'));
});

t(
  'POST /credentials with an unknown permission: 422 on the item, nearest name suggested',
  async ({ b }) => {
    const res = await b.api('POST', '/api/v3/credentials', {
      key: newKey(),
      body: { name: 'typo', permissions: ['users.read', 'users.reed', 'nothing.like_it'] },
    });
    assert.is(res.status, 422);
    assert.is(res.body.error.code, 'validation_failed');
    assert.equal(
      res.body.error.details.map((d: any) => [d.field, d.code, d.message]),
      [
        [
          'permissions.1',
          'invalid_value',
          'Not a permission of the contract: users.reed. Did you mean users.read?',
        ],
        ['permissions.2', 'invalid_value', 'Not a permission of the contract: nothing.like_it.'],
      ],
    );
    const list = await b.api('GET', '/api/v3/credentials?limit=200');
    assert.not.ok(list.body.data.some((c: any) => c.name === 'typo'));
  },
);

t('PATCH /credentials/{id} with an unknown permission: 422, nothing changes', async ({ b }) => {
  const made = await b.api('POST', '/api/v3/credentials', {
    key: newKey(),
    body: { name: 'reader', permissions: ['users.read', 'deliveries.archive'] },
  });
  assert.is(made.status, 201);
  const id = made.body.data.id;
  const res = await b.api('PATCH', `/api/v3/credentials/${id}`, {
    body: { permissions: ['tags.raed'] },
  });
  assert.is(res.status, 422);
  assert.is(res.body.error.details[0].field, 'permissions.0');
  assert.match(res.body.error.details[0].message, /Did you mean tags\.read\?/);
  const after = await b.api('GET', `/api/v3/credentials/${id}`);
  assert.equal(after.body.data.permissions, ['users.read', 'deliveries.archive']);
  assert.is(after.body.data.revision, made.body.data.revision);
});

t.run();
