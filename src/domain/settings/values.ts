// The user-profile settings document: four writable groups of fields, each with a default. Only the
// values set away from the defaults are stored (an "overrides" document with the contract's field
// names, as stored JSON), so a default can change in a later release without rewriting rows, and
// `null` in a PATCH simply removes the override.

export const DEFAULTS = {
  defaults: { locale: 'pt-BR', country: 'BR' },
  propagation: { replicas: true },
  display: { full_name_in_support: false },
  profile: {
    hide_address: false,
    hide_document: false,
    hide_phone: false,
    lock_editing: false,
    lock_email: false,
  },
} as const;

type Widen<T> = T extends boolean ? boolean : T extends string ? string : T;
type Groups = typeof DEFAULTS;
export type GroupName = keyof Groups;

/** Every field with its effective value. */
export type SettingsValues = { [G in GroupName]: { [F in keyof Groups[G]]: Widen<Groups[G][F]> } };

/** The stored overrides: any subset of the fields. */
export type Overrides = { [G in GroupName]?: { [F in keyof Groups[G]]?: Widen<Groups[G][F]> } };

/** A PATCH body: a group or a field set to null returns to its default. */
export type SettingsPatch = {
  [G in GroupName]?: { [F in keyof Groups[G]]?: Widen<Groups[G][F]> | null } | null;
};

const GROUPS = Object.keys(DEFAULTS) as GroupName[];

/** The defaults with the overrides laid over them. */
export function effective(overrides: Overrides): SettingsValues {
  const out: Record<string, Record<string, unknown>> = {};
  for (const g of GROUPS) out[g] = { ...DEFAULTS[g], ...(overrides[g] ?? {}) };
  return out as SettingsValues;
}

/**
 * Merges a PATCH into the overrides: only the groups and fields present change; null removes the
 * override. Names outside the document are ignored here (the contract refuses them first, 422
 * unknown_field), and only own keys are read, so `__proto__` can never reach the prototype.
 */
export function applyPatch(current: Overrides, patch: SettingsPatch): Overrides {
  const next: Record<string, Record<string, unknown>> = {};
  for (const g of GROUPS) {
    const had = { ...((current[g] as Record<string, unknown> | undefined) ?? {}) };
    const change = Object.hasOwn(patch, g) ? patch[g] : undefined;
    if (change === null) continue;
    if (change !== undefined) {
      for (const f of Object.keys(DEFAULTS[g])) {
        if (!Object.hasOwn(change, f)) continue;
        const v = (change as Record<string, unknown>)[f];
        if (v === null) delete had[f];
        else had[f] = v;
      }
    }
    if (Object.keys(had).length) next[g] = had;
  }
  return next as Overrides;
}

/** Same overrides, whatever the key order. */
export function sameOverrides(a: Overrides, b: Overrides): boolean {
  const canon = (o: Overrides) =>
    JSON.stringify(
      GROUPS.map((g) => [g, Object.entries(o[g] ?? {}).sort(([x], [y]) => (x < y ? -1 : 1))]),
    );
  return canon(a) === canon(b);
}

/** The fields a PATCH names, as `group.field` (or the group), for replica_readonly's details. */
export function namedFields(patch: SettingsPatch): string[] {
  return GROUPS.filter((g) => Object.hasOwn(patch, g)).flatMap((g) => {
    const change = patch[g];
    return change === null || change === undefined
      ? [g]
      : Object.keys(change).map((f) => `${g}.${f}`);
  });
}
