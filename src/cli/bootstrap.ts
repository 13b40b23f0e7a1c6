// Demo bootstrap on an empty database: a demo account with a v3 credential, a
// legacy API key and an administrator, whose secrets are printed once on stdout.
import type { AccountsService } from '../domain/accounts/service.ts';
import { randomBase62 } from '../domain/shared/ids.ts';
import type { Logger } from '../log.ts';
import { isPostgres } from '../db/knex.ts';
import type { Config } from '../config.ts';

const DEMO_EMAIL = 'admin@demo.school';

export async function bootstrapDemo(
  accounts: AccountsService,
  logger: Logger,
  config: Config,
): Promise<void> {
  if (!(await accounts.isEmpty())) return;
  // A sign-in password: from the CSPRNG, never Math.random.
  const password = 'demo-' + randomBase62(12);
  // One transaction: a crash half-way leaves the database empty, so the next start bootstraps
  // again instead of leaving an account whose secrets were never shown.
  const demo = await accounts.transaction(async (tx) => {
    // Two instances starting at once on an empty PostgreSQL database: only one bootstraps.
    if (isPostgres(tx)) await tx.raw('SELECT pg_advisory_xact_lock(7231001)');
    if (!(await accounts.isEmpty({ tx }))) return null;
    const { id: accountId } = await accounts.createAccount({ name: 'Demo school' }, { tx });
    const credential = await accounts.createRootCredential(
      { accountId, name: 'Demo credential', permissions: ['*'], authMode: 'both' },
      { tx },
    );
    const legacy = await accounts.createLegacyKey(accountId, { tx });
    const admin = await accounts.createAdmin({ accountId, email: DEMO_EMAIL, password }, { tx });
    await accounts.linkAdmin(admin.id, credential.id, { tx });
    return { accountId, credential, legacy, admin };
  });
  if (!demo) return;
  logger.warn(
    { account_id: String(demo.accountId) },
    'Empty database: created a demo account; its secrets are printed once on stdout',
  );
  // Printed, never logged: secrets do not go through the logger. One line, so stdout stays
  // line-delimited JSON (pino lines plus this one) for scripts that pick it out.
  process.stdout.write(
    JSON.stringify({
      demo_bootstrap: true,
      account_id: String(demo.accountId),
      v3_credential_secret: demo.credential.secret,
      legacy_api_key: demo.legacy.key,
      admin: { email: DEMO_EMAIL, password, totp_secret: demo.admin.totpSecret },
      base_url: config.publicBaseUrl,
    }) + '\n',
  );
}
