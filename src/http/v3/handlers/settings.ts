// User-profile settings handlers and presenter. The two URLs are the pages of this account on the
// school's site (PUBLIC_BASE_URL), derived when shown so they follow the configured base.
import type { components } from '../../../../generated/types.ts';
import type { ProfileSettings, SettingsService } from '../../../domain/settings/service.ts';
import type { SettingsPatch } from '../../../domain/settings/values.ts';
import { etag } from '../../../domain/shared/revision.ts';
import type { Handlers } from './types.ts';

type SettingsOut = components['schemas']['UserProfileSettings'];

export function presentSettings(baseUrl: string, s: ProfileSettings): SettingsOut {
  const account = `${baseUrl}/accounts/${s.accountId}`;
  const v = s.values;
  return {
    object: 'settings',
    revision: s.revision,
    custom_fields_url: `${account}/custom-fields`,
    defaults: {
      locale: v.defaults.locale as SettingsOut['defaults']['locale'],
      country: v.defaults.country,
    },
    propagation: { replicas: v.propagation.replicas },
    replica: {
      source_account_id: s.sourceAccountId === null ? null : String(s.sourceAccountId),
      inherited: s.inherited,
    },
    display: { full_name_in_support: v.display.full_name_in_support },
    profile: { ...v.profile },
    signup_form: { embed_url: `${account}/signup/embed` },
  };
}

export function settingsHandlers(
  baseUrl: string,
  s: SettingsService,
): Pick<Handlers, 'getUserProfileSettings' | 'updateUserProfileSettings'> {
  const answer = (x: ProfileSettings) => ({
    status: 200 as const,
    body: { data: presentSettings(baseUrl, x) },
    headers: { ETag: etag(x.revision) },
  });
  return {
    async getUserProfileSettings({ auth }) {
      return answer(await s.get(auth.account.id));
    },
    async updateUserProfileSettings({ auth, body, ifMatch, tx }) {
      return answer(await s.update(auth.account.id, body as SettingsPatch, ifMatch, { tx }));
    },
  };
}
