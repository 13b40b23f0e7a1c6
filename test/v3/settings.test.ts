// GET and PATCH /settings/user-profile: defaults, partial merges, null back to the default, ETag and
// If-Match, unknown and read-only fields, permissions, and replica accounts.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, credentialWith, type Booted } from '../helpers/app.ts';
import { account } from '../helpers/catalog.ts';

const S = '/api/v3/settings/user-profile';
const t = suite<{ b: Booted }>('v3 user profile settings');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

const PROFILE_DEFAULTS = {
  hide_address: false,
  hide_document: false,
  hide_phone: false,
  lock_editing: false,
  lock_email: false,
};

const patch = (b: Booted, body: unknown, headers: Record<string, string> = {}, secret?: string) =>
  b.api('PATCH', S, { body, headers, secret });

t('an account that never wrote them reads every field at its default', async ({ b }) => {
  const { id, secret } = await account(b, 'Fresh school');
  const res = await b.api('GET', S, { secret });
  assert.is(res.status, 200);
  const base = b.url;
  assert.equal(res.body.data, {
    object: 'settings',
    revision: '0',
    custom_fields_url: `${base}/accounts/${id}/custom-fields`,
    defaults: { locale: 'pt-BR', country: 'BR' },
    propagation: { replicas: true },
    replica: { source_account_id: null, inherited: false },
    display: { full_name_in_support: false },
    profile: PROFILE_DEFAULTS,
    signup_form: { embed_url: `${base}/accounts/${id}/signup/embed` },
  });
  assert.is(res.headers.get('etag'), '"0"');
});

t('PATCH changes only the fields present; nested objects merge', async ({ b }) => {
  const first = await patch(b, { profile: { lock_email: true }, defaults: { locale: 'en-US' } });
  assert.is(first.status, 200);
  assert.equal(first.body.data.profile, { ...PROFILE_DEFAULTS, lock_email: true });
  assert.equal(first.body.data.defaults, { locale: 'en-US', country: 'BR' });
  assert.is.not(first.body.data.revision, '0');
  assert.is(first.headers.get('etag'), `"${first.body.data.revision}"`);

  const second = await patch(b, {
    profile: { hide_phone: true },
    display: { full_name_in_support: true },
  });
  assert.equal(second.body.data.profile, {
    ...PROFILE_DEFAULTS,
    lock_email: true,
    hide_phone: true,
  });
  assert.equal(second.body.data.defaults, { locale: 'en-US', country: 'BR' });
  assert.is(second.body.data.display.full_name_in_support, true);
  assert.is.not(second.body.data.revision, first.body.data.revision);

  const read = await b.api('GET', S);
  assert.equal(read.body.data, second.body.data);
  assert.is(read.headers.get('etag'), `"${second.body.data.revision}"`);
});

t('null returns a field, or a whole object, to its default', async ({ b }) => {
  await patch(b, {
    profile: { hide_address: true, lock_editing: true },
    defaults: { country: 'PT' },
  });
  const one = await patch(b, { profile: { hide_address: null } });
  assert.is(one.status, 200);
  assert.is(one.body.data.profile.hide_address, false);
  assert.is(one.body.data.profile.lock_editing, true);
  assert.is(one.body.data.defaults.country, 'PT');
  const all = await patch(b, { profile: null, defaults: { country: null } });
  assert.equal(all.body.data.profile, PROFILE_DEFAULTS);
  assert.equal(all.body.data.defaults, { locale: 'en-US', country: 'BR' });
});

t('a PATCH that changes nothing keeps the revision', async ({ b }) => {
  const before = await b.api('GET', S);
  const same = await patch(b, { defaults: { locale: before.body.data.defaults.locale } });
  assert.is(same.status, 200);
  assert.is(same.body.data.revision, before.body.data.revision);
  const empty = await patch(b, {});
  assert.is(empty.body.data.revision, before.body.data.revision);
});

t('If-Match: the current ETag applies; another answers 412 and changes nothing', async ({ b }) => {
  const cur = await b.api('GET', S);
  const etag = cur.headers.get('etag')!;
  const ok = await patch(b, { display: { full_name_in_support: false } }, { 'If-Match': etag });
  assert.is(ok.status, 200);
  const stale = await patch(b, { profile: { hide_document: true } }, { 'If-Match': etag });
  assert.is(stale.status, 412);
  assert.is(stale.body.error.code, 'revision_mismatch');
  const malformed = await patch(b, { profile: { hide_document: true } }, { 'If-Match': '' });
  assert.is(malformed.status, 412);
  const after = await b.api('GET', S);
  assert.is(after.body.data.profile.hide_document, false);
  assert.is(after.body.data.revision, ok.body.data.revision);
  // The initial revision of an account that never wrote works as an ETag too.
  const fresh = await account(b, 'Never written');
  const first = await patch(
    b,
    { profile: { hide_phone: true } },
    { 'If-Match': '"0"' },
    fresh.secret,
  );
  assert.is(first.status, 200);
  const again = await patch(
    b,
    { profile: { hide_phone: false } },
    { 'If-Match': '"0"' },
    fresh.secret,
  );
  assert.is(again.status, 412);
});

t('unknown and read-only fields answer 422 unknown_field; wrong types 422', async ({ b }) => {
  const before = await b.api('GET', S);
  for (const [body, field] of [
    [{ colour: 'red' }, 'colour'],
    [{ profile: { hide_everything: true } }, 'profile.hide_everything'],
    [{ revision: 'x' }, 'revision'],
    [{ custom_fields_url: 'https://example.com' }, 'custom_fields_url'],
    [{ signup_form: { embed_url: 'https://example.com' } }, 'signup_form'],
    [{ replica: { inherited: false } }, 'replica'],
    [JSON.parse('{"__proto__": {"lock_email": true}}'), '__proto__'],
  ] as const) {
    const res = await patch(b, body);
    assert.is(res.status, 422, JSON.stringify(body));
    assert.is(res.body.error.code, 'unknown_field');
    assert.ok(
      res.body.error.details.some((d: any) => d.field === field),
      JSON.stringify(res.body),
    );
  }
  for (const body of [
    { profile: { lock_email: 'yes' } },
    { defaults: { locale: 'de-DE' } },
    { defaults: { country: 'brazil' } },
    { display: true },
  ]) {
    const res = await patch(b, body);
    assert.is(res.status, 422, JSON.stringify(body));
    assert.is(res.body.error.code, 'validation_failed');
  }
  assert.equal((await b.api('GET', S)).body.data, before.body.data);
});

t('permissions: settings.read to read, settings.write to change', async ({ b }) => {
  const reader = await credentialWith(b, ['settings.read']);
  assert.is((await b.api('GET', S, { secret: reader.secret })).status, 200);
  const refused = await patch(b, { profile: { lock_email: true } }, {}, reader.secret);
  assert.is(refused.status, 403);
  assert.is(refused.body.error.code, 'permission_denied');
  const writer = await credentialWith(b, ['settings.write']);
  assert.is((await b.api('GET', S, { secret: writer.secret })).status, 403);
  assert.is((await patch(b, { profile: { lock_email: true } }, {}, writer.secret)).status, 200);
});

t('a replica follows its source, read-only, while the source propagates', async ({ b }) => {
  const source = await account(b, 'Source school');
  const replica = await account(b, 'Replica school', source.id);
  const mine = await patch(b, { profile: { lock_editing: true } }, {}, source.secret);
  const seen = await b.api('GET', S, { secret: replica.secret });
  assert.is(seen.status, 200);
  assert.equal(seen.body.data.profile, mine.body.data.profile);
  assert.equal(seen.body.data.replica, { source_account_id: String(source.id), inherited: true });
  assert.is(seen.body.data.revision, mine.body.data.revision);
  // Its own URLs, though: the sign-up form is the replica's.
  assert.ok(seen.body.data.signup_form.embed_url.includes(`/accounts/${replica.id}/`));

  const refused = await patch(b, { profile: { lock_editing: false } }, {}, replica.secret);
  assert.is(refused.status, 403);
  assert.is(refused.body.error.code, 'replica_readonly');
  assert.equal(refused.body.error.details[0].field, 'profile.lock_editing');

  // The source stops propagating: the replica has settings of its own, writable.
  await patch(b, { propagation: { replicas: false } }, {}, source.secret);
  const own = await b.api('GET', S, { secret: replica.secret });
  assert.equal(own.body.data.replica, { source_account_id: String(source.id), inherited: false });
  assert.equal(own.body.data.profile, PROFILE_DEFAULTS);
  const written = await patch(b, { profile: { hide_phone: true } }, {}, replica.secret);
  assert.is(written.status, 200);
  assert.is(written.body.data.profile.hide_phone, true);
  assert.is((await b.api('GET', S, { secret: source.secret })).body.data.profile.hide_phone, false);
  // Propagating again: the source's settings win once more.
  await patch(b, { propagation: null }, {}, source.secret);
  const back = await b.api('GET', S, { secret: replica.secret });
  assert.is(back.body.data.replica.inherited, true);
  assert.is(back.body.data.profile.hide_phone, false);
});

t.run();
