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
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const)
  blocked.addSubnet(prefix, bits, 'ipv6');

/** An IPv4 address carried in an IPv4-mapped IPv6 one (`::ffff:7f00:1`, `::ffff:127.0.0.1`). */
function mappedIpv4(address: string): string | null {
  const m = /^::ffff:(.+)$/i.exec(address);
  if (!m) return null;
  if (net.isIPv4(m[1]!)) return m[1]!;
  const hex = /^([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(m[1]!);
  if (!hex) return null;
  const [hi, lo] = [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16)];
  return [hi >> 8, hi & 255, lo >> 8, lo & 255].join('.');
}

/** Whether an IP address is outside the public internet. */
export function isPrivateAddress(address: string): boolean {
  const v4 = net.isIPv4(address) ? address : mappedIpv4(address);
  if (v4) return blocked.check(v4, 'ipv4');
  if (net.isIPv6(address)) return blocked.check(address, 'ipv6');
  return true; // not an address at all: never connect to it
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
