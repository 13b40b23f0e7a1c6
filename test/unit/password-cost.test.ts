// PASSWORD_HASH_COST: the work factor of new administrator password hashes (scrypt N = 2^cost).
// The test runner lowers it to 10 for speed; here the default and the rule that a hash keeps the
// cost it was made with (so lowering or raising it never locks anybody out).
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../src/config.ts';
import { hashPassword, verifyPassword } from '../../src/domain/accounts/service.ts';
import { boot } from '../helpers/app.ts';

const t = suite('PASSWORD_HASH_COST');

t('default 15 (N = 32768); 10 to 20 accepted; anything else names the variable', () => {
  assert.is(loadConfig({}).passwordHashCost, 15);
  assert.is(loadConfig({ PASSWORD_HASH_COST: '10' }).passwordHashCost, 10);
  assert.is(loadConfig({ PASSWORD_HASH_COST: '20' }).passwordHashCost, 20);
  for (const bad of ['9', '21', 'fast', '-1'])
    assert.throws(
      () => loadConfig({ PASSWORD_HASH_COST: bad }),
      /PASSWORD_HASH_COST: '.*' is not (between 10 and 20|a whole number)/,
      bad,
    );
});

t('a hash names its own N and verifies whatever the current cost', async () => {
  const strong = await hashPassword('correct horse');
  assert.match(strong, /^scrypt\$32768\$/);
  const cheap = await hashPassword('correct horse', 10);
  assert.match(cheap, /^scrypt\$1024\$/);
  assert.ok(await verifyPassword('correct horse', strong));
  assert.ok(await verifyPassword('correct horse', cheap));
  assert.not.ok(await verifyPassword('correct horsf', cheap));
});

t('the server hashes new administrators at the configured cost', async () => {
  const b = await boot({ env: { PASSWORD_HASH_COST: '12' } });
  try {
    const { id } = await b.app.services.accounts.createAdmin({
      accountId: b.accountId,
      email: 'cost@school.test',
      password: 'a long password',
    });
    const row = await b.app.db('administrators').where({ id }).first('password_hash');
    assert.match(row.password_hash, /^scrypt\$4096\$/);
    const accounts = b.app.services.accounts;
    assert.ok(await accounts.checkPassword('a long password', row.password_hash));
    assert.not.ok(await accounts.checkPassword('a long password', undefined));
  } finally {
    await b.close();
  }
});

t.run();
