// Per-account feature switches (today: imports, on by default). The admin CLI switches them;
// the areas they guard answer 409 feature_disabled while off.
import type { Tx } from '../../db/engine.ts';
import { bool } from '../../db/dialect.ts';
import { AppError } from '../../errors.ts';

export interface Features {
  imports: boolean;
}

export async function features({ tx }: { tx: Tx }, accountId: number): Promise<Features | null> {
  const r = await tx('accounts').where('id', accountId).first('imports_enabled');
  return r ? { imports: bool(r.imports_enabled) } : null;
}

export async function setFeatures(
  { tx }: { tx: Tx },
  accountId: number,
  changes: Partial<Features>,
) {
  if (changes.imports !== undefined)
    await tx('accounts').where('id', accountId).update({ imports_enabled: changes.imports });
  return features({ tx }, accountId);
}

export async function assertFeature({ tx }: { tx: Tx }, accountId: number, name: keyof Features) {
  const f = await features({ tx }, accountId);
  if (!f?.[name])
    throw new AppError('feature_disabled', {
      details: [
        { code: 'feature_disabled', message: `${name} are off for this account.`, reason: name },
      ],
    });
}
