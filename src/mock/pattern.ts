// The shortest-ish string a simple regular expression matches, for mocking a `pattern` that has
// no example: literals, escapes (\d \w \s \S \.), classes with ranges, groups with alternatives
// (the first is taken) and quantifiers (their minimum). Anything it cannot read, or a sample the
// pattern does not actually match, gives undefined: the caller keeps its own value.

const ESCAPES: Record<string, string> = { d: '0', w: 'a', s: ' ', S: 'a', D: 'a', W: '-' };

function sampleClass(body: string): string | undefined {
  const negated = body.startsWith('^');
  const chars = negated ? body.slice(1) : body;
  if (!negated) {
    if (chars[0] === '\\') return ESCAPES[chars[1]!] ?? chars[1];
    return chars[0];
  }
  const re = new RegExp(`[${body}]`);
  return ['a', '0', 'A', '_', '-', ' '].find((c) => re.test(c));
}

/** Samples `src` from `at` until `)` or the end; returns the sample and where it stopped. */
function sampleSeq(src: string, at: number): { out: string; at: number } | undefined {
  let out = '';
  let alternative: string | undefined;
  while (at < src.length && src[at] !== ')') {
    const c = src[at]!;
    let piece: string | undefined;
    if (c === '|') {
      alternative ??= out; // the first alternative wins
      out = '';
      at++;
      continue;
    } else if (c === '^' || c === '$') {
      at++;
      continue;
    } else if (c === '\\') {
      piece = ESCAPES[src[at + 1]!] ?? src[at + 1];
      at += 2;
    } else if (c === '[') {
      const end = src.indexOf(']', at + 2);
      if (end < 0) return undefined;
      piece = sampleClass(src.slice(at + 1, end));
      at = end + 1;
    } else if (c === '(') {
      const start = src.startsWith('(?:', at) ? at + 3 : at + 1;
      const inner = sampleSeq(src, start);
      if (!inner || src[inner.at] !== ')') return undefined;
      piece = inner.out;
      at = inner.at + 1;
    } else if (c === '.') {
      piece = 'a';
      at++;
    } else {
      piece = c;
      at++;
    }
    if (piece === undefined) return undefined;
    const q = /^(?:\{(\d+)(?:,\d*)?\}|[?*+])/.exec(src.slice(at));
    let times = 1;
    if (q) {
      times = q[1] !== undefined ? Number(q[1]) : q[0] === '+' ? 1 : 0;
      at += q[0].length;
    }
    out += piece.repeat(times);
  }
  return { out: alternative ?? out, at };
}

export function samplePattern(pattern: string, minLength = 0, maxLength = Infinity) {
  let re: RegExp;
  try {
    re = new RegExp(pattern, 'u');
  } catch {
    return undefined;
  }
  const sampled = sampleSeq(pattern, 0);
  if (!sampled || sampled.at !== pattern.length) return undefined;
  let value = sampled.out;
  // An unanchored end may be padded to the minimum length; re-checked below either way.
  if (value.length < minLength && !pattern.endsWith('$')) value = value.padEnd(minLength, 'a');
  return re.test(value) && value.length >= minLength && value.length <= maxLength
    ? value
    : undefined;
}
