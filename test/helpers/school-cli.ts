// Runs the `school` CLI in-process against a booted server: what it printed on stdout (lines),
// stderr (lines), and where its progress bars were drawn.
import { PassThrough } from 'node:stream';
import { main } from '../../src/cli/school/main.ts';

export interface CliRun {
  code: number;
  out: string[];
  err: string[];
  drawn: string;
}

export async function school(
  server: { url: string; secret: string },
  args: string[],
  env: Record<string, string> = {},
): Promise<CliRun> {
  const out: string[] = [];
  const err: string[] = [];
  const bars = new PassThrough();
  let drawn = '';
  bars.on('data', (c) => (drawn += c.toString()));
  const code = await main([...args, '--base-url', server.url, '--api-key', server.secret], {
    out: (l) => out.push(l),
    err: (l) => err.push(l),
    env,
    bars,
  });
  return { code, out, err, drawn };
}
