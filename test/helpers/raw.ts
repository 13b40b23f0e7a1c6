// Raw HTTP for what fetch cannot send: duplicated headers, bodies streamed without a length.
import http from 'node:http';

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

export function rawRequest(
  url: string,
  method: string,
  rawHeaders: [string, string][],
  body?: Buffer | string | (Buffer | string)[],
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const flat = [['Host', u.host] as [string, string], ...rawHeaders].flat();
    const req = http.request({
      host: u.hostname,
      port: u.port,
      path: u.pathname + u.search,
      method,
      headers: flat,
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: any = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode!, headers: res.headers, body: parsed });
      });
    });
    req.on('error', reject);
    for (const part of Array.isArray(body) ? body : body === undefined ? [] : [body])
      req.write(part);
    req.end();
  });
}
