// CPF (Brazilian taxpayer number): 11 digits, the last two are check digits (mod 11).
// Callers may send it punctuated ("529.982.247-25") or bare; we store the digits only.

/** Punctuation people actually type around a CPF; anything else (letters...) is rejected. */
const ALLOWED = /^[0-9.\-\s/]+$/;

function checkDigit(digits: number[], weightStart: number): number {
  const sum = digits.reduce((acc, d, i) => acc + d * (weightStart - i), 0);
  const rest = (sum * 10) % 11;
  return rest === 10 ? 0 : rest;
}

/** The 11 digits of a valid CPF, or null when the value is not one. */
export function normalizeCpf(raw: string): string | null {
  if (!ALLOWED.test(raw)) return null;
  const digits = raw.replace(/\D/g, '');
  if (digits.length !== 11) return null;
  // 000.000.000-00, 111.111.111-11... pass the arithmetic but are not issued.
  if (/^(\d)\1{10}$/.test(digits)) return null;
  const n = [...digits].map(Number);
  if (checkDigit(n.slice(0, 9), 10) !== n[9]) return null;
  if (checkDigit(n.slice(0, 10), 11) !== n[10]) return null;
  return digits;
}
