// Streams bytes to and from signed URLs with node:http(s): a part is read from the file as it
// is sent, with its Content-Length (S3 refuses chunked part uploads), and a download is written
// as it arrives. Neither holds a part or the file in memory.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

const counting = (onBytes: (n: number) => void) =>
  new Transform({
    transform(chunk: Buffer, _enc, done) {
      onBytes(chunk.length);
      done(null, chunk);
    },
  });

/** PUTs bytes [start, start + size) of `file`; resolves with the answer's ETag. */
export function putRange(
  url: string,
  file: string,
  start: number,
  size: number,
  onBytes: (n: number) => void,
): Promise<string> {
  const u = new URL(url);
  const lib = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = lib.request(
      u,
      { method: 'PUT', headers: { 'content-length': String(size) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => {
          const etag = res.headers.etag;
          if (res.statusCode === 200 && etag) resolve(etag);
          else reject(new Error(`part upload answered ${res.statusCode}: ${text.slice(0, 300)}`));
        });
      },
    );
    req.on('error', reject);
    const body = size === 0 ? null : fs.createReadStream(file, { start, end: start + size - 1 });
    if (!body) return req.end();
    pipeline(body, counting(onBytes), req).catch(reject);
  });
}

/** GETs `url` into `file`; calls onStart with the total size once the answer's headers arrive. */
export function getToFile(
  url: string,
  file: string,
  onStart: (total: number) => void,
  onBytes: (n: number) => void,
): Promise<void> {
  const u = new URL(url);
  const lib = u.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    lib
      .get(u, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`download answered ${res.statusCode}`));
          return;
        }
        onStart(Number(res.headers['content-length'] ?? 0));
        pipeline(res, counting(onBytes), fs.createWriteStream(file)).then(resolve, reject);
      })
      .on('error', reject);
  });
}
