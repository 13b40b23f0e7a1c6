// The admin CLI's commands . Each declares its flags and usage line, validates
// them into an input before the database is opened (a typo never creates or migrates a file),
// and runs one service call. Output ids are decimal strings, as in v3.
import { rotateSigningKey } from '../oauth/keys.ts';
import { ACCOUNT_STATUSES } from '../domain/accounts/service.ts';
import type { Services } from '../services.ts';
import { setFeatures } from '../domain/accounts/features.ts';
import { transaction } from '../db/tx.ts';
import { AppError } from '../errors.ts';
import * as a from './args.ts';
import type { FlagSpec, Flags } from './args.ts';

export interface Command<I = any> {
  usage: string;
  flags: Record<string, FlagSpec>;
  /** Throws UsageError; runs before the database is touched. */
  validate(f: Flags): I;
  /** Names the records a not_found can be about, for a useful error message. */
  subject(input: I): string;
  /** Message for a unique-constraint conflict, when the command can cause one. */
  conflict?: string;
  run(services: Services, input: I): Promise<Record<string, unknown>>;
}

const command = <I>(c: Command<I>): Command => c;
const str = (n: number) => String(n);
const req = { type: 'string', required: true } as const;
const opt = { type: 'string' } as const;
const flag = { type: 'boolean' } as const;

function credentialStatus(status: 'revoked' | 'suspended' | 'expired') {
  const verb = { revoked: 'revoke', suspended: 'suspend', expired: 'expire' }[status];
  return command({
    usage: `credential ${verb} --id ID`,
    flags: { id: req },
    validate: (f) => a.id(f.id, 'id'),
    subject: (id) => `credential ${id}`,
    async run({ accounts }, id) {
      const r = await accounts.setCredentialStatus(id, status);
      return { id: str(r.id), status: r.status };
    },
  });
}

function adminLink(verb: 'link' | 'unlink') {
  return command({
    usage: `admin ${verb} --admin ID --credential ID`,
    flags: { admin: req, credential: req },
    validate: (f) => ({
      admin: a.id(f.admin, 'admin'),
      credential: a.id(f.credential, 'credential'),
    }),
    subject: ({ admin, credential }) =>
      verb === 'link'
        ? `administrator ${admin} or credential ${credential}`
        : `link between administrator ${admin} and credential ${credential}`,
    async run({ accounts }, { admin, credential }) {
      const r =
        verb === 'link'
          ? await accounts.linkAdmin(admin, credential)
          : await accounts.unlinkAdmin(admin, credential);
      return { admin_id: str(r.admin_id), credential_id: str(r.credential_id) };
    },
  });
}

export const COMMANDS: Record<string, Command> = {
  'account create': command({
    usage: 'account create --name NAME [--sandbox] [--replica-of ACCOUNT_ID]',
    flags: { name: req, sandbox: flag, 'replica-of': opt },
    validate: (f) => ({
      name: a.text(f.name, 'name'),
      sandbox: Boolean(f.sandbox),
      replicaOf: f['replica-of'] === undefined ? null : a.id(f['replica-of'], 'replica-of'),
    }),
    subject: (input) => `account ${input.replicaOf} (--replica-of)`,
    async run({ accounts }, input) {
      return { id: str((await accounts.createAccount(input)).id) };
    },
  }),
  'account status': command({
    usage: `account status --id ID --status ${ACCOUNT_STATUSES.join('|')}`,
    flags: { id: req, status: req },
    validate: (f) => ({
      id: a.id(f.id, 'id'),
      status: a.oneOf(f.status, 'status', ACCOUNT_STATUSES),
    }),
    subject: (input) => `account ${input.id}`,
    async run({ accounts }, input) {
      const r = await accounts.setAccountStatus(input.id, input.status);
      return { id: str(r.id), status: r.status };
    },
  }),
  'account features': command({
    usage: 'account features --id ID --imports on|off',
    flags: { id: req, imports: req },
    validate: (f) => ({
      id: a.id(f.id, 'id'),
      imports: a.oneOf(f.imports, 'imports', ['on', 'off'] as const) === 'on',
    }),
    subject: (input) => `account ${input.id}`,
    async run({ db }, input) {
      const features = await transaction(db, (tx) =>
        setFeatures({ tx }, input.id, { imports: input.imports }),
      );
      if (!features) throw new AppError('not_found');
      return { id: str(input.id), features };
    },
  }),
  'credential create': command({
    usage:
      "credential create --account ID [--permissions p1,p2 | --permissions '*'] " +
      `[--auth-mode ${a.AUTH_MODES.join('|')}] [--test] [--name NAME]`,
    flags: { account: req, permissions: opt, 'auth-mode': opt, test: flag, name: opt },
    validate: (f) => ({
      accountId: a.id(f.account, 'account'),
      permissions: a.permissions(f.permissions),
      authMode:
        f['auth-mode'] === undefined
          ? 'autonomous'
          : a.oneOf(f['auth-mode'], 'auth-mode', a.AUTH_MODES),
      test: Boolean(f.test),
      name: f.name === undefined ? undefined : a.text(f.name, 'name'),
    }),
    subject: (input) => `account ${input.accountId}`,
    async run({ accounts }, input) {
      const r = await accounts.createRootCredential(input);
      return { id: str(r.id), secret: r.secret };
    },
  }),
  'credential revoke': credentialStatus('revoked'),
  'credential suspend': credentialStatus('suspended'),
  'credential expire': credentialStatus('expired'),
  'admin create': command({
    usage: 'admin create --account ID --email EMAIL --password PASSWORD',
    flags: { account: req, email: req, password: req },
    validate: (f) => ({
      accountId: a.id(f.account, 'account'),
      email: a.email(f.email),
      password: a.password(f.password),
    }),
    subject: (input) => `account ${input.accountId}`,
    conflict: 'An administrator with this email already exists',
    async run({ accounts }, input) {
      const r = await accounts.createAdmin(input);
      return { id: str(r.id), totp_secret: r.totpSecret };
    },
  }),
  'admin link': adminLink('link'),
  'admin unlink': adminLink('unlink'),
  'admin remove': command({
    usage: 'admin remove --id ID',
    flags: { id: req },
    validate: (f) => a.id(f.id, 'id'),
    subject: (id) => `administrator ${id}`,
    async run({ accounts }, id) {
      const r = await accounts.removeAdmin(id);
      return { id: str(r.id), status: r.status };
    },
  }),
  'legacy-key create': command({
    usage: 'legacy-key create --account ID',
    flags: { account: req },
    validate: (f) => a.id(f.account, 'account'),
    subject: (accountId) => `account ${accountId}`,
    async run({ accounts }, accountId) {
      return { key: (await accounts.createLegacyKey(accountId)).key };
    },
  }),
  'signing-key rotate': command({
    usage: 'signing-key rotate',
    flags: {},
    validate: () => null,
    subject: () => 'signing key',
    // A new OAuth signing key: access tokens already issued keep verifying until they expire;
    // running servers pick the new key up within a minute.
    async run({ db, clock, secretsKey }) {
      const r = await rotateSigningKey({ db, clock, secretsKey });
      return { kid: r.kid, retired: r.retired.join(',') };
    },
  }),
};
