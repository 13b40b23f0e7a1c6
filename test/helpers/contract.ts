// Validates every v3 response a test receives against the contract: the operation's declared
// schema for that status, and the error envelope for errors and routes outside the spec. An
// operation's error status must be declared by the operation itself: `default` covers 500 only.
import Ajv2020Import from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { buildCatalog } from '../../src/http/v3/catalog.ts';
import { V3Router } from '../../src/http/v3/router.ts';

const Ajv2020 = Ajv2020Import as unknown as typeof Ajv2020Import.default;
const addFormats = addFormatsImport as unknown as typeof addFormatsImport.default;

const esc = (p: string) => p.replace(/~/g, '~0').replace(/\//g, '~1');

export class ContractChecker {
  private readonly ajv;
  private readonly router: V3Router;
  private readonly cache = new Map<string, any>();
  private readonly spec: any;

  constructor(spec: any) {
    this.spec = spec;
    this.ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats(this.ajv);
    // The contract spells out what `format: email` means (the Email schema's x-format-pattern).
    const email = spec.components?.schemas?.Email?.['x-format-pattern'];
    if (email) this.ajv.addFormat('email', new RegExp(email, 'i'));
    this.ajv.addSchema(spec, 'spec');
    this.router = new V3Router(buildCatalog(spec));
  }

  private validator(ref: string) {
    let v = this.cache.get(ref);
    if (!v) {
      v = this.ajv.compile({ $ref: ref });
      this.cache.set(ref, v);
    }
    return v;
  }

  /** Throws with a readable message when the response does not match the contract. */
  check(
    method: string,
    path: string,
    status: number,
    contentType: string | null,
    body: unknown,
  ): void {
    const where = `${method} ${path} -> ${status}`;
    const match = this.router.find(method, path.split('?')[0]!);
    if (status === 204) {
      if (body !== undefined) throw new Error(`${where}: 204 with a body`);
      return;
    }
    if (!contentType?.startsWith('application/json'))
      throw new Error(`${where}: content-type ${contentType}`);
    let ref = 'spec#/components/schemas/Error';
    if (match && status >= 400 && status !== 500) {
      const op = this.spec.paths[match.op.path][method.toLowerCase()];
      if (!op.responses[String(status)])
        throw new Error(
          `${where}: status not declared by ${op.operationId} (only default covers it)`,
        );
    }
    if (match && status < 400) {
      const op = this.spec.paths[match.op.path][method.toLowerCase()];
      if (!op.responses[String(status)])
        throw new Error(`${where}: status not declared in the spec`);
      ref = `spec#/paths/${esc(match.op.path)}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
      const response = this.resolve(op.responses[String(status)]);
      if (!response.content) throw new Error(`${where}: the spec declares no body`);
    }
    const validate = this.validator(ref);
    if (!validate(body)) {
      throw new Error(
        `${where}: response does not match the contract: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
      );
    }
  }

  private resolve(node: any): any {
    if (!node?.$ref) return node;
    const parts = node.$ref.replace(/^#\//, '').split('/');
    return this.resolve(parts.reduce((acc: any, p: string) => acc?.[p], this.spec));
  }
}
