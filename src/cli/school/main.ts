// `npm run school -- <command>`: login, whoami, logout, operations watch. Human mode always pairs
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
import { unreachableMessage } from './reach.ts';
import type { Io } from './io.ts';

const USAGE = `Usage: npm run school -- <command> [options]

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
  plan FILE.yaml
            plan the school's configuration in FILE (YAML or JSON): print what would
            change (+ create, ~ update with its fields, - delete) and the plan's id
  apply PLAN_ID
            apply a plan and follow its operation with a progress bar (exit 0 only
            when every change was applied)
  manifest pull
            print the current configuration as YAML (e.g. > school.yaml)

Options:
  --base-url URL   server (env SCHOOL_BASE_URL; default http://127.0.0.1:3000)
  --api-key KEY    API credential secret for human-mode calls (env SCHOOL_API_KEY)
  --no-browser     only print the sign-in URL (env SCHOOL_OPEN_BROWSER=0)
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
        types: { type: 'string' },
        'forward-to': { type: 'string' },
        secret: { type: 'string' },
        stream: { type: 'string' },
        json: { type: 'boolean' },
        purpose: { type: 'string' },
        type: { type: 'string' },
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
  const baseUrl = (values['base-url'] ?? io.env.SCHOOL_BASE_URL ?? 'http://127.0.0.1:3000').replace(
    /\/+$/,
    '',
  );
  const server = new Server(baseUrl);
  const store = new TokenStore(configDir(io.env));
  try {
    switch (command) {
      case 'login':
        await login({
          server,
          store,
          openBrowser: !values['no-browser'] && io.env.SCHOOL_OPEN_BROWSER !== '0',
          print: io.out,
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
        const apiKey = values['api-key'] ?? io.env.SCHOOL_API_KEY;
        if (positionals[1] !== 'listen') {
          io.err(
            `Usage: npm run school -- events listen [--types a,b] [--forward-to URL]\n\n${USAGE}`,
          );
          return 2;
        }
        if (!apiKey) {
          io.err('error: pass --api-key or set SCHOOL_API_KEY');
          return 2;
        }
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
                    'x-api-key': apiKey,
                    authorization: `Bearer ${await accessToken(server, store)}`,
                  }
                : { authorization: `Bearer ${apiKey}` },
          });
        } finally {
          process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
        }
      }
      case 'files': {
        const apiKey = values['api-key'] ?? io.env.SCHOOL_API_KEY;
        const [, action, target] = positionals;
        const purpose = values.purpose;
        const ok =
          target &&
          ((action === 'upload' && (purpose === 'import' || purpose === 'attachment')) ||
            action === 'download');
        if (!ok) {
          io.err(
            `Usage: npm run school -- files upload FILE --purpose import|attachment\n       npm run school -- files download ID [-o FILE]\n\n${USAGE}`,
          );
          return 2;
        }
        if (!apiKey) {
          io.err('error: pass --api-key or set SCHOOL_API_KEY');
          return 2;
        }
        const human = store.get(server.baseUrl) !== undefined;
        const client = createClient({
          baseUrl,
          secret: apiKey,
          accessToken: human ? () => accessToken(server, store) : undefined,
        });
        if (action === 'download') return await download(client, target, values.output, io);
        return await upload({
          client,
          file: target,
          purpose: purpose as 'import' | 'attachment',
          contentType: values.type,
          stateDir: configDir(io.env),
          io,
        });
      }
      case 'operations': {
        const apiKey = values['api-key'] ?? io.env.SCHOOL_API_KEY;
        if (positionals[1] !== 'watch' || !positionals[2]) {
          io.err(`Usage: npm run school -- operations watch ID\n\n${USAGE}`);
          return 2;
        }
        if (!apiKey) {
          io.err('error: pass --api-key or set SCHOOL_API_KEY');
          return 2;
        }
        const human = store.get(server.baseUrl) !== undefined;
        return await watch({
          client: createClient({
            baseUrl,
            secret: apiKey,
            accessToken: human ? () => accessToken(server, store) : undefined,
          }),
          id: positionals[2],
          io,
          stream: io.bars,
          intervalMs: io.env.SCHOOL_POLL_MS ? Number(io.env.SCHOOL_POLL_MS) : undefined,
        });
      }
      case 'plan':
      case 'apply':
      case 'manifest': {
        const apiKey = values['api-key'] ?? io.env.SCHOOL_API_KEY;
        const target = positionals[1];
        if (!target || (command === 'manifest' && target !== 'pull')) {
          io.err(
            `Usage: npm run school -- plan FILE.yaml | apply PLAN_ID | manifest pull\n\n${USAGE}`,
          );
          return 2;
        }
        if (!apiKey) {
          io.err('error: pass --api-key or set SCHOOL_API_KEY');
          return 2;
        }
        const human = store.get(server.baseUrl) !== undefined;
        const client = createClient({
          baseUrl,
          secret: apiKey,
          accessToken: human ? () => accessToken(server, store) : undefined,
        });
        if (command === 'plan') return await plan(client, target, io);
        if (command === 'manifest') return await pullManifest(client, io);
        const interval = io.env.SCHOOL_POLL_MS ? Number(io.env.SCHOOL_POLL_MS) : undefined;
        return await apply(client, target, io, interval);
      }
      default:
        io.err(`Unknown command: ${command}\n\n${USAGE}`);
        return 2;
    }
  } catch (err) {
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
