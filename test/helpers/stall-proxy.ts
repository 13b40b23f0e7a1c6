// A TCP proxy on 127.0.0.1 in front of a store (s3rver), for timeout tests: passing, it forwards
// both ways; stalled, it accepts connections and never answers (what it receives goes nowhere,
// so the store never sees a request the client gave up on). Stalling drops the connections it
// holds, so a client's pooled sockets meet the stall too.
import net from 'node:net';

export interface StallProxy {
  endpoint: string;
  stall(): void;
  pass(): void;
  close(): Promise<void>;
}

export async function stallProxy(targetPort: number): Promise<StallProxy> {
  let stalled = false;
  const open = new Set<net.Socket>();
  const server = net.createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => undefined);
    if (stalled) {
      client.resume(); // read and drop
      return;
    }
    const upstream = net.connect(targetPort, '127.0.0.1');
    open.add(upstream);
    upstream.on('close', () => open.delete(upstream));
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const dropAll = () => {
    for (const s of open) s.destroy();
    open.clear();
  };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stall() {
      stalled = true;
      dropAll();
    },
    pass() {
      stalled = false;
      dropAll();
    },
    async close() {
      dropAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
