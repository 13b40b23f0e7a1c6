// engine: any
// Every relative link of README.md, docs/ and spec/*.md resolves: the file exists, and an anchor
// (`guide.md#tests`, `#mock-server`) names a heading of that file, slugged as GitHub does. Links
// inside code (fences, `inline`) are not links. Moving a section to another file fails here until
// every link to it follows.
import fs from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';

const ROOT = path.resolve(import.meta.dirname, '../..');
const t = suite('docs: relative links and anchors');

/** The markdown outside code fences and inline code. */
function prose(text: string): string {
  return text.replace(/^```[\s\S]*?^```/gm, '').replace(/``[^`\n]*``|`[^`\n]*`/g, '');
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens, -1 for repeats. */
export function anchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of text.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6} (.+)$/gm)) {
    const slug = m[1]!
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    out.add(n ? `${slug}-${n}` : slug);
  }
  return out;
}

function markdownFiles(): string[] {
  const dir = (d: string) =>
    fs
      .readdirSync(path.join(ROOT, d))
      .filter((f) => f.endsWith('.md'))
      .map((f) => path.join(d, f));
  return ['README.md', ...dir('docs'), ...dir('spec')];
}

t('every relative link and anchor of README, docs/ and spec/ resolves', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const file of markdownFiles()) {
    const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
    for (const m of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // http:, https:, mailto:
      checked++;
      const [target = '', anchor] = link.split('#');
      const resolved = target
        ? path.resolve(ROOT, path.dirname(file), target)
        : path.join(ROOT, file);
      if (!fs.existsSync(resolved)) {
        broken.push(`${file}: ${link} (no such file)`);
        continue;
      }
      if (anchor !== undefined && !anchors(fs.readFileSync(resolved, 'utf8')).has(anchor))
        broken.push(`${file}: ${link} (no heading with that anchor)`);
    }
  }
  assert.equal(broken, []);
  assert.ok(checked >= 10, `only ${checked} links checked`);
});

t('anchors are slugged as GitHub does', () => {
  const text =
    '# A: b\n## Event streams and `school events listen`\n```\n# not a heading\n```\n## A: b\n';
  assert.equal([...anchors(text)], ['a-b', 'event-streams-and-school-events-listen', 'a-b-1']);
});

t.run();
