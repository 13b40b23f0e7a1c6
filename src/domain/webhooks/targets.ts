// Where webhooks may go. Only http(s) URLs without credentials; private, loopback, link-local and
// other non-public addresses are refused unless WEBHOOK_ALLOW_PRIVATE_TARGETS=true. A name is
// checked again at every delivery, after it is resolved (the sender connects to the address it
// checked), so a name that later resolves to an internal address (DNS rebinding) reaches nothing.
import net from 'node:net';
import { AppError } from '../../errors.ts';

const blocked = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata services
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const)
  blocked.addSubnet(prefix, bits, 'ipv4');
for (const [prefix, bits] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96], // NAT64: may reach private IPv4
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): the operator's own IPv4 networks
  ['2001:2::', 48], // benchmarking
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated, still routed inside some networks)
  ['ff00::', 8], // multicast
] as const)
  blocked.addSubnet(prefix, bits, 'ipv6');

/** The eight 16-bit groups of an IPv6 address (`::` expanded, a dotted IPv4 tail split). */
function groups(address: string): number[] | null {
  let text = address; // parseInt reads hex digits in either case
  const tail = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    if (!net.isIPv4(tail[2]!)) return null;
    const [a, b, c, d] = tail[2]!.split('.').map(Number) as [number, number, number, number];
    text = `${tail[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const part = (h: string) => (h === '' ? [] : h.split(':').map((g) => parseInt(g, 16)));
  const head = part(halves[0]!);
  const rest = halves.length === 2 ? part(halves[1]!) : [];
  const fill = halves.length === 2 ? 8 - head.length - rest.length : 0;
  const out = [...head, ...new Array<number>(Math.max(fill, 0)).fill(0), ...rest];
  return out.length === 8 && out.every((g) => g >= 0 && g <= 0xffff) ? out : null;
}

const v4 = (hi: number, lo: number) => [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');

/**
 * IPv4 addresses an IPv6 address embeds or routes to: IPv4-compatible `::a.b.c.d` (::/96),
 * IPv4-mapped `::ffff:a.b.c.d` and SIIT-translated `::ffff:0:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4
 * `2002:AABB:CCDD::/48`, and Teredo `2001:0::/32` (its server, and its client stored inverted).
 * Each is checked like the IPv4 address itself: the path to it may end inside our network.
 */
export function embeddedIpv4(address: string): string[] {
  const g = groups(address);
  if (!g) return [];
  const zeros = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeros(5) && (g[5] === 0 || g[5] === 0xffff)) return [v4(g[6]!, g[7]!)];
  if (zeros(4) && g[4] === 0xffff && g[5] === 0) return [v4(g[6]!, g[7]!)];
  if (g[0] === 0x64 && g[1] === 0xff9b) return [v4(g[6]!, g[7]!)];
  if (g[0] === 0x2002) return [v4(g[1]!, g[2]!)];
  if (g[0] === 0x2001 && g[1] === 0)
    return [v4(g[2]!, g[3]!), v4(~g[6]! & 0xffff, ~g[7]! & 0xffff)];
  return [];
}

/** Whether an IP address is outside the public internet, or reaches it through one that is. */
export function isPrivateAddress(address: string): boolean {
  if (net.isIPv4(address)) return blocked.check(address, 'ipv4');
  if (!net.isIPv6(address)) return true; // not an address at all: never connect to it
  if (blocked.check(address, 'ipv6')) return true;
  return embeddedIpv4(address).some((a) => blocked.check(a, 'ipv4'));
}

const invalid = (code: string, message: string) =>
  new AppError('validation_failed', { details: [{ field: 'url', code, message }] });

/** The URL's host without IPv6 brackets. */
export const hostOf = (url: URL) => url.hostname.replace(/^\[(.*)\]$/, '$1');

/**
 * Checks a destination URL at registration; returns it normalized. A name is not resolved here
 * (that would be a network call inside the request's transaction): it is resolved and checked at
 * each delivery.
 */
export function checkTarget(raw: string, allowPrivate: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('invalid_format', 'Must be an absolute http or https URL.');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid('invalid_format', 'Must be an absolute http or https URL.');
  if (url.username || url.password)
    throw invalid('invalid_format', 'Must not carry a user name or password.');
  // `new URL` takes port 0 (and refuses past 65535); nothing listens on 0, so no delivery could.
  if (url.port === '0') throw invalid('invalid_format', 'The port must be between 1 and 65535.');
  if (url.hash) throw invalid('invalid_format', 'Must not carry a fragment (#...).');
  const host = hostOf(url);
  if (!allowPrivate) {
    const name = host.toLowerCase().replace(/\.+$/, ''); // `localhost.` is localhost too
    const local = name === 'localhost' || name.endsWith('.localhost');
    if (local || (net.isIP(host) && isPrivateAddress(host)))
      throw invalid(
        'private_target',
        'Private, loopback and link-local addresses cannot receive webhooks.',
      );
  }
  return url.href;
}
