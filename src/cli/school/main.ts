// `npm run school -- <command>`: login, whoami, logout, operations watch, events listen, files,
// imports run, exports, logs tail. Human mode always pairs
// the administrator's access token with an API credential (--api-key or SCHOOL_API_KEY), which is
// never stored.
import { parseArgs } from 'node:util';
import * as oauth from 'oauth4webapi';
import { login } from './login.ts';
import { CliError, Server, accessToken } from './oauth-client.ts';
import { TokenStore, configDir } from './store.ts';
import { watch } from './watch.ts';
import { download, upload } from './files.ts';
import { apply, plan, pullManifest } from './plans.ts';
import { createClient } from '../../client/index.ts';
import { listen } from './listen.ts';
import { completionScript } from './completion.ts';
import { trigger } from './trigger.ts';
import { tail } from './logs.ts';
import {
  UsageError,
  createExport,
  downloadExport,
  parseFilters,
  parseMapping,
  runImport,
} from './imports.ts';
import { unreachableMessage } from './reach.ts';
import type { Io } from './io.ts';

const USAGE = `Usage: npx school <command> [options]   (or: npm run school -- <command>)

Commands:
  login     sign in as an administrator in the browser and store tokens
  whoami    show the credential and administrator of a human-mode call
  logout    revoke the stored tokens and forget them
  operations watch ID
            follow an operation with a progress bar until it finishes (every 2 s for
            30 s, then every 10 s); exit 0 only when it succeeded. Uses the stored
            login (human mode) when there is one, else the API key alone.
  events listen [--types a,b] [--forward-to URL]
            follow the account's events live (an event stream of the credential,
            reused when a free one has the same types); one line per event: id, type,
            created_at. --forward-to posts each event to URL signed like a webhook
            (Standard Webhooks headers; the whsec_ secret is printed at start, or
            pass --secret). --stream ID follows that stream. Reconnects after the
            last event received. Ctrl-C stops.
  files upload FILE --purpose import|attachment [--type MEDIA/TYPE]
            upload a file in parts (four at a time, with a progress bar) and print
            its file id; run it again after an interruption to resume (only the
            missing parts are sent)
  files download ID [-o FILE]
            download a file (with a progress bar) to FILE or its own name
  imports run FILE.csv [--map email=E-mail,product_external_id=Produto,status=Situacao]
            [--duplicate-policy skip|keep_last] [--dry-run]
            upload the CSV, create a students_access import, analyse it and print
            its counters and the rows that are not ready (with the reason); then
            process the ready rows with a progress bar (not with --dry-run). Exit 0
            only when every ready row was applied.
  exports create [--columns id,name,email,...] [--filters JSON] [-o FILE]
            export the account's users to CSV (--filters as in POST /exports, e.g.
            '{"tag_id":["3"],"status":"active"}'): wait for the export, then
            download it to FILE (default export-ID.csv)
  exports download ID [-o FILE]
            download a completed export's CSV
  plan FILE.yaml
            plan the school's configuration in FILE (YAML or JSON): print what would
            change (+ create, ~ update with its fields, - delete) and the plan's id
  apply PLAN_ID
            apply a plan and follow its operation with a progress bar (exit 0 only
            when every change was applied)
  manifest pull
            print the current configuration as YAML (e.g. > school.yaml)
  trigger EVENT_TYPE
            make the account record one event of that type through the v3 routes
            that cause it (user.created, tag.assigned, enrollment.ended, ...), to try
            a webhook receiver or an event stream; test credentials (sch_test_...) only
  logs tail [--status 4xx|404] [--since INSTANT]
            follow the account's audit trail live: one line per request (time,
            status, method, path, duration, request id, operation), from now on
            (or from --since); --status keeps one status or a class. Ctrl-C stops.
  completion bash|zsh
            print a shell completion script: source <(npx school completion bash)

Options:
  --base-url URL   server (env SCHOOL_BASE_URL; default http://127.0.0.1:3000)
  --api-key KEY    API credential secret for human-mode calls (env SCHOOL_API_KEY)
  --no-browser     only print the sign-in URL (env SCHOOL_OPEN_BROWSER=0)
  --paste          login: read the callback address pasted from a browser on another
                   machine (SSH) from stdin (on by default in a terminal)
  --json           whoami: print the credential as JSON
`;

export type { Io };

const defaultIo: Io = {
  out: (line) => process.stdout.write(line + '\n'),
  err: (line) => process.stderr.write(line + '\n'),
  env: process.env,
};

export async function main(argv: string[], io: Io = defaultIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        'base-url': { type: 'string' },
        'api-key': { type: 'string' },
        'no-browser': { type: 'boolean' },
        paste: { type: 'boolean' },
        types: { type: 'string' },
        'forward-to': { type: 'string' },
        secret: { type: 'string' },
        stream: { type: 'string' },
        json: { type: 'boolean' },
        purpose: { type: 'string' },
        map: { type: 'string' },
        'duplicate-policy': { type: 'string' },
        'dry-run': { type: 'boolean' },
        columns: { type: 'string' },
        filters: { type: 'string' },
        type: { type: 'string' },
        status: { type: 'string' },
        since: { type: 'string' },
        output: { type: 'string', short: 'o' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    io.err(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const { values, positionals } = parsed;
  const command = positionals[0];
  if (values.help || !command) {
    (values.help ? io.out : io.err)(USAGE);
    return values.help ? 0 : 2;
  }
  if (command === 'completion') {
    const script = completionScript(positionals[1] ?? '');
    if (!script) {
      io.err(`Usage: npx school completion bash|zsh\n\n${USAGE}`);
      return 2;
    }
    io.out(script);
    return 0;
  }
  const baseUrl = (values['base-url'] ?? io.env.SCHOOL_BASE_URL ?? 'http://127.0.0.1:3000').replace(
    /\/+$/,
    '',
  );
  const server = new Server(baseUrl);
  const store = new TokenStore(configDir(io.env));
  /** The typed client for a command that calls v3: human mode when logged in, else the key alone. */
  const v3 = (apiKey: string) =>
    createClient({
      baseUrl,
      secret: apiKey,
      accessToken: store.get(server.baseUrl) ? () => accessToken(server, store) : undefined,
    });
  const pollMs = io.env.SCHOOL_POLL_MS ? Number(io.env.SCHOOL_POLL_MS) : undefined;
  const apiKey = values['api-key'] ?? io.env.SCHOOL_API_KEY;
  /** The API key of a command that calls v3 (exit 2 without one). */
  const key = (): string => {
    if (!apiKey) throw new UsageError('pass --api-key or set SCHOOL_API_KEY');
    return apiKey;
  };
  /** A command line that cannot work: its usage, then the whole list (exit 2). */
  // Typed as a whole, so that the compiler knows no code runs after a call.
  const usage: (line: string) => never = (line) => {
    throw new UsageError(`${line}\n\n${USAGE}`, true);
  };
  try {
    switch (command) {
      case 'login':
        await login({
          server,
          store,
          openBrowser: !values['no-browser'] && io.env.SCHOOL_OPEN_BROWSER !== '0',
          print: io.out,
          // A terminal can always take a pasted callback address; a pipe only when asked.
          input: values.paste || process.stdin.isTTY ? (io.stdin ?? process.stdin) : undefined,
        });
        return 0;
      case 'whoami':
        return await whoami(
          server,
          store,
          values['api-key'] ?? io.env.SCHOOL_API_KEY,
          !!values.json,
          io,
        );
      case 'logout':
        return await logout(server, store, io);
      case 'events': {
        if (positionals[1] !== 'listen') {
          usage(`Usage: npm run school -- events listen [--types a,b] [--forward-to URL]`);
        }
        const secret = key();
        const human = store.get(server.baseUrl) !== undefined;
        const stop = new AbortController();
        const onSignal = () => stop.abort();
        process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
        try {
          return await listen({
            baseUrl,
            io,
            types: values.types
              ?.split(',')
              .map((t) => t.trim())
              .filter(Boolean),
            forwardTo: values['forward-to'],
            secret: values.secret,
            streamId: values.stream,
            retryMs: io.env.SCHOOL_RETRY_MS ? Number(io.env.SCHOOL_RETRY_MS) : undefined,
            signal: io.signal ?? stop.signal,
            headers: async (): Promise<Record<string, string>> =>
              human
                ? {
                    'x-api-key': secret,
                    authorization: `Bearer ${await accessToken(server, store)}`,
                  }
                : { authorization: `Bearer ${secret}` },
          });
        } finally {
          process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
        }
      }
      case 'files': {
        const [, action, target] = positionals;
        const purpose = values.purpose;
        const ok =
          target &&
          ((action === 'upload' && (purpose === 'import' || purpose === 'attachment')) ||
            action === 'download');
        if (!ok) {
          usage(
            `Usage: npm run school -- files upload FILE --purpose import|attachment\n       npm run school -- files download ID [-o FILE]`,
          );
        }
        const client = v3(key());
        if (action === 'download') return await download(client, target, values.output, io);
        io.out(
          await upload({
            client,
            file: target,
            purpose: purpose as 'import' | 'attachment',
            contentType: values.type,
            stateDir: configDir(io.env),
            io,
          }),
        );
        return 0;
      }
      case 'imports': {
        const policy = values['duplicate-policy'];
        if (
          positionals[1] !== 'run' ||
          !positionals[2] ||
          (policy !== undefined && policy !== 'skip' && policy !== 'keep_last')
        ) {
          usage(
            `Usage: npm run school -- imports run FILE.csv [--map F=H,...] [--duplicate-policy skip|keep_last] [--dry-run]`,
          );
        }
        return await runImport({
          client: v3(key()),
          file: positionals[2],
          mapping: parseMapping(values.map),
          duplicatePolicy: policy,
          dryRun: !!values['dry-run'],
          stateDir: configDir(io.env),
          io,
          intervalMs: pollMs,
        });
      }
      case 'exports': {
        const [, action, id] = positionals;
        if (!(action === 'create' || (action === 'download' && id))) {
          usage(
            `Usage: npm run school -- exports create [--columns a,b] [--filters JSON] [-o FILE]\n       npm run school -- exports download ID [-o FILE]`,
          );
        }
        if (action === 'download') return await downloadExport(v3(key()), id!, values.output, io);
        return await createExport({
          client: v3(key()),
          columns: (values.columns ?? 'id,name,email,created_at')
            .split(',')
            .map((c) => c.trim())
            .filter(Boolean),
          filters: parseFilters(values.filters),
          out: values.output,
          io,
          intervalMs: pollMs,
        });
      }
      case 'trigger': {
        if (!positionals[1]) {
          usage(`Usage: school trigger EVENT_TYPE`);
        }
        return await trigger(v3(key()), positionals[1], io);
      }
      case 'logs': {
        if (positionals[1] !== 'tail') usage(`Usage: npx school logs tail [--status 4xx]`);
        const stop = new AbortController();
        const onSignal = () => stop.abort();
        process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
        try {
          return await tail({
            client: v3(key()),
            io,
            status: values.status,
            since: values.since,
            intervalMs: pollMs,
            signal: io.signal ?? stop.signal,
          });
        } finally {
          process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
        }
      }
      case 'operations': {
        if (positionals[1] !== 'watch' || !positionals[2]) {
          usage(`Usage: npm run school -- operations watch ID`);
        }
        return await watch({
          client: v3(key()),
          id: positionals[2],
          io,
          stream: io.bars,
          intervalMs: pollMs,
        });
      }
      case 'plan':
      case 'apply':
      case 'manifest': {
        const target = positionals[1];
        if (!target || (command === 'manifest' && target !== 'pull')) {
          usage(`Usage: npx school plan FILE.yaml | apply PLAN_ID | manifest pull`);
        }
        const client = v3(key());
        if (command === 'plan') return await plan(client, target, io);
        if (command === 'manifest') return await pullManifest(client, io);
        return await apply(client, target, io, pollMs);
      }
      default:
        io.err(`Unknown command: ${command}\n\n${USAGE}`);
        return 2;
    }
  } catch (err) {
    if (err instanceof UsageError) {
      io.err(err.bare ? err.message : `error: ${err.message}`);
      return 2;
    }
    io.err(`error: ${unreachableMessage(err, baseUrl) ?? describe(err)}`);
    return 1;
  }
}

async function whoami(
  server: Server,
  store: TokenStore,
  apiKey: string | undefined,
  json: boolean,
  io: Io,
): Promise<number> {
  if (!apiKey) {
    io.err('error: human mode needs an API credential: pass --api-key or set SCHOOL_API_KEY');
    return 2;
  }
  const get = async (token: string) =>
    createClient({ baseUrl: server.baseUrl, secret: apiKey, accessToken: token }).GET(
      '/credentials/current',
    );
  let res = await get(await accessToken(server, store));
  if (res.response.status === 401 && res.error?.error?.code === 'invalid_access_token') {
    // Expired or revoked earlier than the stored expiry says: one refresh, one retry.
    res = await get(await accessToken(server, store, { force: true }));
  }
  if (!res.data) {
    const { error, response } = res;
    io.err(
      `error: ${error?.error?.code ?? response.status}: ${error?.error?.message ?? response.statusText}`,
    );
    return 1;
  }
  const c = res.data.data;
  if (json) {
    io.out(JSON.stringify(c, null, 2));
    return 0;
  }
  io.out(`Server:        ${server.baseUrl}`);
  io.out(`Administrator: ${c.human?.admin_id ?? '-'}`);
  io.out(`Credential:    ${c.id} "${c.name}" (${c.environment}, ...${c.secret_last4})`);
  io.out(`Auth mode:     ${c.auth_mode}`);
  io.out(
    `Human mode:    until ${c.human?.expires_at ?? '-'} (linked since ${c.human?.eligible_since ?? '-'})`,
  );
  return 0;
}

async function logout(server: Server, store: TokenStore, io: Io): Promise<number> {
  const stored = store.get(server.baseUrl);
  if (!stored) {
    io.out(`Not logged in to ${server.baseUrl}.`);
    return 0;
  }
  // The refresh token takes its whole grant with it; the access token is revoked explicitly too.
  let revoked = true;
  for (const token of [stored.refresh_token, stored.access_token]) {
    try {
      await server.revoke(token);
    } catch (err) {
      revoked = false;
      io.err(`warning: could not revoke a token: ${describe(err)}`);
    }
  }
  store.delete(server.baseUrl);
  io.out(`Logged out of ${server.baseUrl}${revoked ? '; tokens revoked' : ''}.`);
  return 0;
}

function describe(err: unknown): string {
  if (err instanceof CliError) return err.message;
  if (err instanceof oauth.ResponseBodyError) return `${err.error}: ${err.error_description ?? ''}`;
  if (err instanceof oauth.AuthorizationResponseError)
    return `${err.error}: ${err.error_description ?? ''}`;
  return (err as Error).message ?? String(err);
}
