// `school login`: a one-shot loopback listener on 127.0.0.1 (RFC 8252), the authorize URL printed
// and opened in the browser, then the code exchanged with PKCE and the tokens stored. Over SSH the
// browser runs on another machine and cannot reach the listener: its failed page's address (the
// callback URL, code and state in it) can be pasted into the terminal instead (`--paste`, or any
// interactive terminal), whichever comes first.
import { spawn } from 'node:child_process';
import http from 'node:http';
import readline from 'node:readline';
import type { AddressInfo } from 'node:net';
import * as oauth from 'oauth4webapi';
import { CLIENT, CliError, type Server } from './oauth-client.ts';
import type { TokenStore } from './store.ts';
import { listen } from '../../http/listen.ts';

const WAIT_MS = 5 * 60_000;

export interface LoginOptions {
  server: Server;
  store: TokenStore;
  openBrowser: boolean;
  print: (line: string) => void;
  /** Where a pasted callback address may arrive (stdin). */
  input?: NodeJS.ReadableStream;
}

export async function login({
  server,
  store,
  openBrowser,
  print,
  input,
}: LoginOptions): Promise<void> {
  const as = await server.discover();
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const listener = http.createServer();
  await listen(listener, 0, '127.0.0.1');
  try {
    const redirectUri = `http://127.0.0.1:${(listener.address() as AddressInfo).port}/callback`;
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: CLIENT.client_id,
      redirect_uri: redirectUri,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
    }).toString();

    print('Sign in and approve access in your browser. If it does not open, visit:');
    print('');
    print(`  ${url}`);
    print('');
    if (openBrowser) open(url.toString());
    if (input) {
      print('Browser on another machine (SSH)? After approving, it fails to open');
      print(`${redirectUri}?...: paste that whole address here.`);
    }

    const stop = new AbortController();
    const callback = await Promise.race([
      waitForCallback(listener, state, stop.signal),
      ...(input ? [pastedCallback(input, state, print, stop.signal)] : []),
    ]).finally(() => stop.abort());
    const tokens = await server.exchangeCode(callback, state, redirectUri, verifier);
    store.set(server.baseUrl, tokens);
    print(`Logged in to ${server.baseUrl} as administrator ${tokens.admin_id}.`);
    print(
      `Access token valid until ${tokens.expires_at}; refreshed automatically for up to 30 days.`,
    );
    print(`Tokens saved in ${store.file}`);
  } finally {
    listener.closeAllConnections();
    listener.close();
  }
}

const PAGE = (title: string, text: string) =>
  `<!doctype html><html lang="en"><meta charset="utf-8"><title>${title}</title>` +
  `<body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto">` +
  `<h1>${title}</h1><p>${text}</p></body></html>`;

/**
 * The first /callback request carrying our state; anything else is answered and ignored. Its
 * 5-minute timer ends with the login (signal): a login by pasted address, or one that failed,
 * otherwise kept the process alive for the rest of those 5 minutes.
 */
function waitForCallback(listener: http.Server, state: string, signal: AbortSignal): Promise<URL> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new CliError('no answer from the browser within 5 minutes')),
      WAIT_MS,
    );
    signal.addEventListener('abort', () => clearTimeout(timer));
    listener.on('request', (req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (req.method !== 'GET' || url.pathname !== '/callback') {
        res.writeHead(404).end();
        return;
      }
      if (url.searchParams.get('state') !== state) {
        res.writeHead(400, { 'content-type': 'text/html; charset=utf-8' });
        res.end(PAGE('Unexpected request', 'This sign-in answer does not belong to this login.'));
        return;
      }
      const denied = url.searchParams.get('error');
      res.writeHead(denied ? 400 : 200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        denied
          ? PAGE('Access not granted', 'Return to the terminal for details.')
          : PAGE('Signed in', 'You can close this window and return to the terminal.'),
      );
      clearTimeout(timer);
      const full = new URL(`http://127.0.0.1${req.url}`);
      if (denied) {
        const description = url.searchParams.get('error_description') ?? '';
        reject(new CliError(`authorization failed: ${denied} ${description}`.trim()));
      } else resolve(full);
    });
  });
}

/** The first pasted line that is this login's callback address; other lines get a hint. */
function pastedCallback(
  input: NodeJS.ReadableStream,
  state: string,
  print: (line: string) => void,
  signal: AbortSignal,
): Promise<URL> {
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({ input, terminal: false });
    // Done either way: stop reading, or the open terminal would keep the process alive.
    signal.addEventListener('abort', () => {
      lines.close();
      (input as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
    });
    lines.on('line', (line) => {
      const text = line.trim();
      if (!text) return;
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        print('That is not an address: paste the whole address from the browser.');
        return;
      }
      if (url.pathname !== '/callback' || url.searchParams.get('state') !== state) {
        print("That is not this login's callback address (.../callback?code=...&state=...).");
        return;
      }
      lines.close();
      const denied = url.searchParams.get('error');
      if (denied) {
        const description = url.searchParams.get('error_description') ?? '';
        reject(new CliError(`authorization failed: ${denied} ${description}`.trim()));
      } else resolve(url);
    });
  });
}

/** Best effort: the URL is printed anyway. SCHOOL_OPEN_BROWSER=0 turns it off (tests, SSH). */
function open(url: string): void {
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url]]
        : ['xdg-open', [url]];
  try {
    const child = spawn(command, args as string[], { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    /* no opener on this system: the printed URL is enough */
  }
}
