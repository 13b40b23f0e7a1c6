// The CLI's token file: one entry per server (base URL), readable by the user only (0600 in a
// 0700 folder), replaced atomically so a crash never leaves half a file.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface StoredTokens {
  access_token: string;
  refresh_token: string;
  /** ISO time the access token expires. */
  expires_at: string;
  admin_id: string;
}

interface TokenFile {
  version: 1;
  servers: Record<string, StoredTokens>;
}

/** SCHOOL_CONFIG_DIR (tests), else $XDG_CONFIG_HOME/school-platform, else ~/.config/school-platform. */
export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.SCHOOL_CONFIG_DIR) return env.SCHOOL_CONFIG_DIR;
  const base = env.XDG_CONFIG_HOME || path.join(os.homedir(), '.config');
  return path.join(base, 'school-platform');
}

export class TokenStore {
  readonly file: string;

  constructor(dir = configDir()) {
    this.file = path.join(dir, 'credentials.json');
  }

  private read(): TokenFile {
    try {
      const parsed = JSON.parse(fs.readFileSync(this.file, 'utf8')) as TokenFile;
      return parsed.version === 1 && parsed.servers ? parsed : { version: 1, servers: {} };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { version: 1, servers: {} };
      throw new Error(`cannot read ${this.file}: ${(err as Error).message}`);
    }
  }

  private write(data: TokenFile): void {
    const dir = path.dirname(this.file);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${this.file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(data, null, 2) + '\n', { mode: 0o600 });
    fs.chmodSync(tmp, 0o600); // mode is filtered by the umask; tokens are for the user only
    fs.renameSync(tmp, this.file);
  }

  get(server: string): StoredTokens | undefined {
    const { servers } = this.read();
    return Object.hasOwn(servers, server) ? servers[server] : undefined;
  }

  set(server: string, tokens: StoredTokens): void {
    const data = this.read();
    data.servers[server] = tokens;
    this.write(data);
  }

  delete(server: string): void {
    const data = this.read();
    if (!Object.hasOwn(data.servers, server)) return;
    delete data.servers[server];
    this.write(data);
  }
}
