import type { AccountsService } from '../domain/accounts/service.ts';
import type { Logger } from '../log.ts';
import type { Config } from '../config.ts';

/** On an empty database: a demo account with a credential, a legacy key and an administrator. */
export async function bootstrapDemo(
  accounts: AccountsService,
  logger: Logger,
  config: Config,
): Promise<void> {
  if (!(await accounts.isEmpty())) return;
  const { id: accountId } = await accounts.createAccount({ name: 'Demo school' });
  const credential = await accounts.createRootCredential({
    accountId,
    name: 'Demo credential',
    permissions: ['*'],
    authMode: 'both',
  });
  const legacy = await accounts.createLegacyKey(accountId);
  const password = 'demo-' + Math.random().toString(36).slice(2, 10);
  const admin = await accounts.createAdmin({ accountId, email: 'admin@demo.school', password });
  await accounts.linkAdmin(admin.id, credential.id);
  logger.warn('Empty database: created a demo account. These secrets are shown once:');
  // Printed to stdout, not logged: secrets never go through the logger.
  process.stdout.write(
    JSON.stringify(
      {
        account_id: String(accountId),
        v3_credential_secret: credential.secret,
        legacy_api_key: legacy.key,
        admin: { email: 'admin@demo.school', password, totp_secret: admin.totpSecret },
        base_url: config.publicBaseUrl,
      },
      null,
      2,
    ) + '\n',
  );
}
