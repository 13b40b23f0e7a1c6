import type { Server } from 'node:net';

/**
 * server.listen as a promise that also rejects: without an 'error' listener a port in use is an
 * uncaught exception with a stack, where the caller wants to say one line about it.
 */
export function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}
