// Validates every legacy (v1, v2) response a test receives against that generation's document
// (spec/legacy/v1.yaml, v2.yaml): the operation's schema for that status, or the generation's
// error envelope for paths outside the document. A status the operation does not declare fails.
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import Ajv2020Import from 'ajv/dist/2020.js';
import addFormatsImport from 'ajv-formats';
import { boot, type Api, type Booted, type RequestOptions, type Response } from './app.ts';

const Ajv2020 = Ajv2020Import as unknown as typeof Ajv2020Import.default;
const addFormats = addFormatsImport as unknown as typeof addFormatsImport.default;

const esc = (p: string) => p.replace(/~/g, '~0').replace(/\//g, '~1');
const root = path.resolve(import.meta.dirname, '../..');

interface Route {
  template: string;
  regex: RegExp;
  params: number;
}

class LegacyChecker {
  private readonly ajv;
  private readonly routes: Route[];
  private readonly cache = new Map<string, any>();
  readonly doc: any;

  constructor(doc: any) {
    this.doc = doc;
    this.ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats(this.ajv);
    const email = doc.components.schemas.Email?.['x-format-pattern'];
    if (email) this.ajv.addFormat('email', new RegExp(email, 'i'));
    this.ajv.addSchema(doc, 'spec');
    this.routes = Object.keys(doc.paths).map((template) => ({
      template,
      regex: new RegExp('^' + template.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+') + '$'),
      params: (template.match(/\{/g) ?? []).length,
    }));
  }

  private validator(ref: string) {
    let v = this.cache.get(ref);
    if (!v) this.cache.set(ref, (v = this.ajv.compile({ $ref: ref })));
    return v;
  }

  check(method: string, p: string, status: number, type: string | null, body: unknown): void {
    const where = `${method} ${p} -> ${status}`;
    if (!type?.startsWith('application/json')) throw new Error(`${where}: content-type ${type}`);
    const route = this.routes
      .filter((r) => r.regex.test(p.split('?')[0]!))
      .sort((a, b) => a.params - b.params)[0];
    const op = route && this.doc.paths[route.template][method.toLowerCase()];
    let ref = 'spec#/components/schemas/Error';
    if (op) {
      if (!op.responses[String(status)]) throw new Error(`${where}: status not in the document`);
      if (status < 400) {
        ref = `spec#/paths/${esc(route!.template)}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
      }
    } else if (status !== 404 && status !== 401 && status !== 429 && status !== 403) {
      throw new Error(`${where}: no such operation in the document`);
    }
    const validate = this.validator(ref);
    if (!validate(body)) {
      throw new Error(
        `${where}: response does not match the document: ${this.ajv.errorsText(validate.errors)}\n${JSON.stringify(body).slice(0, 500)}`,
      );
    }
  }
}

const checkers = new Map<string, LegacyChecker>();

export function legacyDoc(generation: 'v1' | 'v2'): any {
  return YAML.parse(fs.readFileSync(path.join(root, `spec/legacy/${generation}.yaml`), 'utf8'));
}

function checker(generation: 'v1' | 'v2'): LegacyChecker {
  let c = checkers.get(generation);
  if (!c) checkers.set(generation, (c = new LegacyChecker(legacyDoc(generation))));
  return c;
}

/** The generation and the path relative to its document, for a path under a legacy prefix. */
export function legacyPath(p: string): { generation: 'v1' | 'v2'; path: string } | null {
  if (p.startsWith('/api/v1/') || p === '/api/v1') return { generation: 'v1', path: p.slice(7) };
  if (p.startsWith('/api/v2/') || p === '/api/v2') return { generation: 'v2', path: p.slice(7) };
  if (p.startsWith('/api/third/')) return { generation: 'v2', path: p.slice(4) };
  return null;
}

/** Throws when a legacy response does not match its generation's document. */
export function checkLegacy(method: string, p: string, res: Response): void {
  const at = legacyPath(p);
  if (!at) throw new Error(`${p} is not a legacy path`);
  checker(at.generation).check(
    method,
    at.path,
    res.status,
    res.headers.get('content-type'),
    res.body,
  );
}

/**
 * A client for the legacy surfaces: sends the legacy key as `Authorization` (raw, without
 * `Bearer `, as most legacy integrations do) and checks every response against the document.
 */
export function legacyClient(b: Booted, key: string): Api {
  return async (method: string, p: string, options: RequestOptions = {}) => {
    const headers = { authorization: key, ...(options.headers ?? {}) };
    const res = await b.api(method, p, { ...options, secret: null, headers });
    checkLegacy(method, p, res);
    return res;
  };
}

export interface LegacyBooted {
  b: Booted;
  /** The school's legacy API key. */
  key: string;
  /** Sends the key and checks every response against spec/legacy/v1.yaml or v2.yaml. */
  legacy: Api;
}

/** The real app with a legacy key for its account. */
export async function bootLegacy(options: Parameters<typeof boot>[0] = {}): Promise<LegacyBooted> {
  const b = await boot(options);
  const { key } = await b.app.services.accounts.createLegacyKey(b.accountId);
  return { b, key, legacy: legacyClient(b, key) };
}

// prettier-ignore
export const UTM_KEYS = ['adcampaign', 'adid', 'fbclid', 'gclid', 'groupid', 'page_name', 'utm_content', 'utm_medium', 'utm_source', 'utm_term'];
export const NULL_UTM: Record<string, string | null> = Object.fromEntries(
  UTM_KEYS.map((k) => [k, null]),
);
