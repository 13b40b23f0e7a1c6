// The contract's types, generated into generated/types.ts by `npm run generate`. The build
// replaces this re-export with a copy of that file (dist/types.d.ts), so the package carries them.
export type { components, operations, paths, webhooks } from '../../../generated/types.ts';
