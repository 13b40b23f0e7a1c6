// Argument parsing and validation for the admin CLI. Anything wrong with the command line is a
// UsageError (exit 2, with the usage text); problems found in the database exit 1.
import { parseArgs } from 'node:util';
import type { AuthMode } from '../domain/credentials/repo.ts';
import { unknownPermission } from '../domain/credentials/permissions.ts';

export class UsageError extends Error {}

export type FlagType = 'string' | 'boolean';

export interface FlagSpec {
  type: FlagType;
  required?: boolean;
}

export type Flags = Record<string, string | boolean | undefined>;

/** Strict parse: unknown, repeated and value-less flags are usage errors, as are positionals. */
export function parseFlags(args: string[], spec: Record<string, FlagSpec>): Flags {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: Object.fromEntries(Object.entries(spec).map(([k, s]) => [k, { type: s.type }])),
      strict: true,
      allowPositionals: false,
      tokens: true,
    });
  } catch (err) {
    throw new UsageError((err as Error).message.split('\n')[0]!);
  }
  // parseArgs keeps the last of a repeated flag; silently dropping one value hides mistakes.
  const seen = new Set<string>();
  for (const token of parsed.tokens ?? []) {
    if (token.kind !== 'option') continue;
    if (seen.has(token.name)) throw new UsageError(`Option '--${token.name}' is given twice`);
    seen.add(token.name);
  }
  const values = parsed.values as Flags;
  for (const [name, s] of Object.entries(spec)) {
    if (s.required && values[name] === undefined)
      throw new UsageError(`Missing required option '--${name}'`);
  }
  return values;
}

/** Database ids: positive decimal integers (printed back as strings). */
export function id(value: string | boolean | undefined, flag: string): number {
  if (typeof value !== 'string' || !/^[1-9][0-9]{0,15}$/.test(value))
    throw new UsageError(`--${flag} must be a positive integer id, got '${String(value)}'`);
  return Number(value);
}

export function text(value: string | boolean | undefined, flag: string, max = 200): string {
  const s = typeof value === 'string' ? value.trim() : '';
  if (!s) throw new UsageError(`--${flag} must not be empty`);
  if (s.length > max) throw new UsageError(`--${flag} is longer than ${max} characters`);
  return s;
}

export function oneOf<T extends string>(
  value: string | boolean | undefined,
  flag: string,
  allowed: readonly T[],
): T {
  if (typeof value !== 'string' || !allowed.includes(value as T))
    throw new UsageError(`--${flag} must be one of ${allowed.join(', ')}, got '${String(value)}'`);
  return value as T;
}

// The contract's Permission schema: `*` or `resource.action`.
const PERMISSION = /^(\*|[a-z_]+\.[a-z_]+)$/;

/** `p1,p2` or `*`; omitted means `*` (a bootstrap credential is the root that issues others). */
export function permissions(value: string | boolean | undefined): string[] {
  if (value === undefined) return ['*'];
  const list = String(value)
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
  if (!list.length) throw new UsageError('--permissions must list at least one permission');
  const bad = list.filter((p) => !PERMISSION.test(p));
  if (bad.length)
    throw new UsageError(
      `Invalid permission ${bad.map((p) => `'${p}'`).join(', ')}: use resource.action (e.g. users.read) or '*'`,
    );
  const unknown = list.map(unknownPermission).filter(Boolean);
  if (unknown.length) throw new UsageError(unknown.join(' '));
  if (list.includes('*') && list.length > 1)
    throw new UsageError("'*' grants every permission: give it alone");
  if (list.length > 100) throw new UsageError('--permissions takes at most 100 permissions');
  return [...new Set(list)];
}

export const AUTH_MODES: readonly AuthMode[] = ['autonomous', 'both', 'human_required'];

export function email(value: string | boolean | undefined): string {
  const s = text(value, 'email', 320);
  if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s))
    throw new UsageError(`--email must be an email address, got '${s}'`);
  return s;
}

/** Administrators sign in with it: refuse trivially short passwords (NIST 800-63B minimum). */
export function password(value: string | boolean | undefined): string {
  if (typeof value !== 'string' || value.length < 8)
    throw new UsageError('--password must have at least 8 characters');
  if (value.length > 200) throw new UsageError('--password is longer than 200 characters');
  return value;
}
