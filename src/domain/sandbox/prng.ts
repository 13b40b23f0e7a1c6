// The scenarios' random numbers: sfc32 (a small, fast generator that passes PractRand), seeded from
// SHA-256 of the scenario's seed and the part being generated. Each part draws from its own stream,
// so a resumed operation regenerates exactly the data of the parts it had not applied yet.
import crypto from 'node:crypto';

export class Prng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, part: string) {
    const h = crypto.createHash('sha256').update(`${seed}:${part}`).digest();
    this.a = h.readUInt32LE(0);
    this.b = h.readUInt32LE(4);
    this.c = h.readUInt32LE(8);
    this.d = h.readUInt32LE(12);
    for (let i = 0; i < 12; i++) this.next();
  }

  /** A float in [0, 1). */
  next(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return (t >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(list: readonly T[]): T {
    return list[this.int(list.length)]!;
  }

  /** `k` distinct elements, in a random order. */
  sample<T>(list: readonly T[], k: number): T[] {
    const copy = [...list];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy.slice(0, k);
  }

  digits(n: number): string {
    let s = '';
    for (let i = 0; i < n; i++) s += String(this.int(10));
    return s;
  }

  /** A valid CPF (11 digits with both check digits), never all digits equal. */
  cpf(): string {
    for (;;) {
      const base = this.digits(9);
      if (/^(\d)\1+$/.test(base)) continue;
      const check = (s: string) => {
        let sum = 0;
        for (let i = 0; i < s.length; i++) sum += Number(s[i]) * (s.length + 1 - i);
        const r = (sum * 10) % 11;
        return String(r === 10 ? 0 : r);
      };
      const ten = base + check(base);
      return ten + check(ten);
    }
  }
}
