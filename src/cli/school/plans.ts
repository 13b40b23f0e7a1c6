// `plan FILE.yaml`, `apply PLAN_ID`, `manifest pull`: the school's configuration kept in a file.
// The CLI converts YAML (JSON is YAML too) to the JSON body of POST /plans, prints the plan as a
// diff (+ create, ~ update with its fields, - delete) and its id; `apply` starts the application
// and follows its operation like `operations watch`; `manifest pull` prints the configuration as
// YAML, ready to be planned again.
import fs from 'node:fs';
import { styleText } from 'node:util';
import { parse, stringify } from 'yaml';
import { idempotencyKey, type V3Client } from '../../client/index.ts';
import type { components } from '../../../generated/types.ts';
import { watch } from './watch.ts';
import type { Io } from './io.ts';

type Plan = components['schemas']['Plan'];
type ApiError = components['schemas']['Error'] | undefined;

/** Colour only for a terminal, never with NO_COLOR (https://no-color.org). */
const colours = (io: Io) =>
  !io.env.NO_COLOR && (io.env.FORCE_COLOR !== undefined || process.stdout.isTTY === true);

function failure(io: Io, error: ApiError, response: Response): number {
  io.err(
    `error: ${error?.error?.code ?? response.status}: ${error?.error?.message ?? response.statusText}`,
  );
  for (const d of error?.error?.details ?? [])
    io.err(`  ${d.field ?? d.parameter ?? ''}: ${d.code}: ${d.message}`);
  return 1;
}

const show = (v: unknown) => JSON.stringify(v);

/** The plan as a diff; `unchanged` resources are only counted. */
export function renderPlan(p: Plan, colour: boolean): string[] {
  const paint = (c: 'green' | 'yellow' | 'red', s: string) =>
    colour ? styleText(c, s, { validateStream: false }) : s;
  const lines: string[] = [];
  for (const c of p.changes) {
    const name = `${c.type}.${c.key}${c.id ? ` (${c.id})` : ''}`;
    if (c.action === 'create') {
      lines.push(paint('green', `+ ${name}`));
      for (const [f, v] of Object.entries(c.fields))
        lines.push(paint('green', `    ${f}: ${show(v.to)}`));
    } else if (c.action === 'update') {
      lines.push(paint('yellow', `~ ${name}`));
      for (const [f, v] of Object.entries(c.fields))
        lines.push(paint('yellow', `    ${f}: ${show(v.from)} -> ${show(v.to)}`));
    } else if (c.action === 'delete') lines.push(paint('red', `- ${name}`));
  }
  const s = p.summary;
  lines.push(
    `Plan ${p.id}: ${s.create} to create, ${s.update} to update, ${s.delete} to delete, ` +
      `${s.unchanged} unchanged. Apply it before ${p.expires_at}: npm run school -- apply ${p.id}`,
  );
  return lines;
}

export async function plan(client: V3Client, file: string, io: Io): Promise<number> {
  let manifest: unknown;
  try {
    manifest = parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    io.err(`error: ${file}: ${(err as Error).message}`);
    return 2;
  }
  const { data, error, response } = await client.POST('/plans', {
    params: { header: { 'Idempotency-Key': idempotencyKey() } },
    body: manifest as components['schemas']['PlanCreate'],
  });
  if (!data) return failure(io, error, response);
  for (const line of renderPlan(data.data, colours(io))) io.out(line);
  return 0;
}

export async function apply(
  client: V3Client,
  id: string,
  io: Io,
  intervalMs?: number,
): Promise<number> {
  const { data, error, response } = await client.POST('/plans/{plan_id}/applications', {
    params: { path: { plan_id: id }, header: { 'Idempotency-Key': idempotencyKey() } },
  });
  if (!data) return failure(io, error, response);
  io.err(`Applying plan ${id}: operation ${data.data.id}`);
  return watch({ client, id: data.data.id, io, stream: io.bars, intervalMs });
}

export async function pullManifest(client: V3Client, io: Io): Promise<number> {
  const { data, error, response } = await client.GET('/manifest');
  if (!data) return failure(io, error, response);
  io.out(stringify(data.data).trimEnd());
  return 0;
}
