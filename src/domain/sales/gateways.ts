// The gateway catalog: which payment gateways a delivery can listen to, whether each requires a
// postback secret, and how each one's postback body becomes one normalized sale event.
import type { IgnoredPostback, SaleEvent } from './postback-fields.ts';
import { parseGeneric } from './gateway-generic.ts';
import { parseMarketplace } from './gateway-marketplace.ts';

export { SALE_STATUSES, type SaleEvent, type SaleStatus } from './postback-fields.ts';

export interface Gateway {
  key: string;
  name: string;
  /** The delivery must have a secret, and every postback must carry it. */
  secretRequired: boolean;
  /** Throws 422 validation_failed for a body this gateway never sends. */
  parse(body: unknown): SaleEvent | IgnoredPostback;
}

export const GATEWAYS: readonly Gateway[] = [
  { key: 'generic', name: 'Generic (JSON)', secretRequired: false, parse: parseGeneric },
  {
    key: 'marketplace',
    name: 'Marketplace checkout',
    secretRequired: true,
    parse: parseMarketplace,
  },
];

export const gatewayOf = (key: string): Gateway | undefined => GATEWAYS.find((g) => g.key === key);
