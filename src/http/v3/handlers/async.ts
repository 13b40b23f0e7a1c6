// Routes that start an operation of their own: product publications, sandbox resets and scenarios.
import type { PublicationsService } from '../../../domain/catalog/publications.ts';
import type { SandboxService } from '../../../domain/sandbox/service.ts';
import { fromId } from '../../../domain/shared/ids.ts';
import { accepted } from './operations.ts';
import type { Handlers } from './types.ts';

export function asyncHandlers(
  publications: PublicationsService,
  sandbox: SandboxService,
): Pick<Handlers, 'createProductPublication' | 'createSandboxReset' | 'createSandboxScenario'> {
  return {
    async createProductPublication({ auth, params, tx }) {
      return accepted(await publications.publish(auth, fromId(params.product_id), { tx }));
    },
    async createSandboxReset({ auth, tx }) {
      return accepted(await sandbox.reset(auth, { tx }));
    },
    async createSandboxScenario({ auth, body, tx }) {
      return accepted(await sandbox.loadScenario(auth, body, { tx }));
    },
  };
}
