// SECRETS_KEY and the signing keys: generated on first start, stored sealed, rotation keeps the
// old key verifying until the tokens it signed have expired, and not a minute longer.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { loadConfig } from '../../src/config.ts';
import { createOAuth, rotateSigningKey } from '../../src/oauth/index.ts';
import { loadSecretsKey, seal, unseal } from '../../src/secrets-key.ts';
import type { Booted } from '../helpers/app.ts';
import { bootOAuth, forge, human, login, serverSigningKey, setupAdmin } from './helpers.ts';

const t = suite<{ b: Booted }>('oauth keys');
t.before(async (ctx) => {
  ctx.b = await bootOAuth();
});
t.after(async (ctx) => ctx.b.close());

t('the secrets key file is generated once, 0600, and reused', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-secrets-'));
  try {
    const dataDir = path.join(dir, 'data');
    const first = loadSecretsKey({ dataDir, secretsKey: undefined });
    const file = path.join(dataDir, 'secrets.key');
    assert.is(fs.statSync(file).mode & 0o777, 0o600);
    assert.equal(loadSecretsKey({ dataDir, secretsKey: undefined }), first);
    assert.is(first.length, 32);
    // SECRETS_KEY wins and writes nothing.
    const other = path.join(dir, 'other');
    const fromEnv = loadSecretsKey({ dataDir: other, secretsKey: 'a'.repeat(32) });
    assert.is(fs.existsSync(other), false);
    assert.is.not(fromEnv.equals(first), true);
    assert.throws(() => loadSecretsKey({ dataDir: other, secretsKey: 'short' }));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

t('seal/unseal: AES-256-GCM bound to its context', () => {
  const key = loadSecretsKey({ dataDir: '/nonexistent', secretsKey: 'x'.repeat(40) });
  const sealed = seal(key, 'private key', 'kid-1');
  assert.is.not(sealed.includes('private key'), true);
  assert.is(unseal(key, sealed, 'kid-1'), 'private key');
  assert.throws(() => unseal(key, sealed, 'kid-2'));
  const wrong = loadSecretsKey({ dataDir: '/nonexistent', secretsKey: 'y'.repeat(40) });
  assert.throws(() => unseal(wrong, sealed, 'kid-1'));
});

t('the signing key is generated on first start and stored sealed', async ({ b }) => {
  const rows = await b.app.db('oauth_signing_keys');
  assert.is(rows.length, 1);
  const row = rows[0];
  assert.is(row.alg, 'RS256');
  assert.is(JSON.parse(row.public_jwk).d, undefined);
  assert.match(row.private_jwk_sealed, /^v1\./);
  assert.is(row.private_jwk_sealed.includes('"d"'), false);
  if (!process.env.TEST_DATABASE_URL) {
    const config = loadConfig({ DATABASE_URL: b.database.url });
    assert.ok(fs.existsSync(path.join(config.dataDir, 'secrets.key')));
  }
});

t(
  'a different SECRETS_KEY cannot open the stored key: the server refuses to start',
  async ({ b }) => {
    const config = loadConfig({ DATABASE_URL: b.database.url, SECRETS_KEY: 'z'.repeat(44) });
    const deps = { db: b.app.db, clock: b.clock, config, logger: b.app.logger };
    try {
      await createOAuth({ ...deps, accounts: b.app.services.accounts });
      assert.unreachable('createOAuth should fail');
    } catch (err) {
      assert.match((err as Error).message, /Cannot decrypt the OAuth signing key/);
    }
  },
);

t('rotation: the old key verifies until its tokens expire, then never again', async ({ b }) => {
  const admin = await setupAdmin(b);
  const call = (token: string) =>
    b.api('GET', '/api/v3/credentials/current', human(admin.credentialSecret, token));
  const before = (await login(b, admin)).tokens.access_token;
  const oldKid = decodeProtectedHeader(before).kid!;
  const old = await serverSigningKey(b, oldKid);

  const secretsKey = loadSecretsKey(loadConfig({ DATABASE_URL: b.database.url }));
  const { kid: newKid, retired } = await rotateSigningKey({
    db: b.app.db,
    clock: b.clock,
    secretsKey,
  });
  assert.equal(retired, [oldKid]);
  // Instances pick the new key up within a minute.
  b.clock.advance(61_000);
  const after = (await login(b, admin)).tokens.access_token;
  assert.is(decodeProtectedHeader(after).kid, newKid);
  assert.is((await call(before)).status, 200);
  assert.is((await call(after)).status, 200);

  // One access-token lifetime after the rotation, the old key is out.
  b.clock.advance(3600_000);
  const latest = (await login(b, admin)).tokens.access_token;
  const claims = decodeJwt(latest);
  const withOld = await forge(old.key, { kid: oldKid, typ: 'at+jwt' }, claims);
  const res = await call(withOld);
  assert.is(res.status, 401);
  assert.is(res.body.error.code, 'invalid_access_token');
  const current = await serverSigningKey(b, newKid);
  assert.is(
    (await call(await forge(current.key, { kid: newKid, typ: 'at+jwt' }, claims))).status,
    200,
  );

  // The next rotation deletes keys that can no longer verify anything.
  await rotateSigningKey({ db: b.app.db, clock: b.clock, secretsKey });
  assert.is(await b.app.db('oauth_signing_keys').where('kid', oldKid).first(), undefined);
});

t.run();
