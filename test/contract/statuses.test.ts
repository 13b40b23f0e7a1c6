// engine: any
// The status rule (src/contract/statuses.ts): every v3 operation declares every status it can
// answer, derived from what it is; the check names each missing operation and status, and
// `--fix` writes them in as one-line references to shared responses, leaving the rest as it was.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import YAML from 'yaml';
import { fixStatuses, missingStatuses, requiredStatuses } from '../../src/contract/statuses.ts';
import { loadSpec } from '../../src/app.ts';
import { ContractChecker } from '../helpers/contract.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const t = suite<{ dir: string }>('contract: declared statuses');
t.before((ctx) => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'school-statuses-'));
});
t.after((ctx) => fs.rmSync(ctx.dir, { recursive: true, force: true }));

const TINY = `openapi: 3.1.0
info: { title: tiny, version: 3.0.0 }
security:
  - credential: []
paths:
  /things/{id}:
    parameters:
      - name: id
        in: path
        required: true
        schema: { type: string }
    patch:
      operationId: updateThing
      x-permissions: [things.write]
      parameters:
        - $ref: '#/components/parameters/IfMatch'
        - name: Idempotency-Key
          in: header
          schema: { type: string }
      requestBody:
        content:
          application/json:
            schema: { type: object }
      responses:
        # the one success
        '200':
          description: Updated.
        '401': { $ref: '#/components/responses/Unauthorized' }
        default: { $ref: '#/components/responses/Error' }
  /things:
    get:
      operationId: listThings
      responses:
        '200':
          description: The things.
components:
  parameters:
    IfMatch:
      name: If-Match
      in: header
      schema: { type: string }
  responses:
    Unauthorized: { description: no }
    Error: { description: 500 }
`;

t('the working contract declares every status of every operation', () => {
  const doc = YAML.parse(fs.readFileSync(path.join(ROOT, 'spec/openapi.yaml'), 'utf8'));
  assert.equal(missingStatuses(doc), []);
  for (const item of Object.values<any>(doc.paths))
    for (const op of Object.values<any>(item)) {
      if (!op?.responses) continue;
      assert.is(op.responses.default?.$ref, '#/components/responses/Error', op.operationId);
    }
});

t('statuses follow from the operation: path, If-Match, Idempotency-Key, sunset', () => {
  const doc = YAML.parse(TINY);
  const patch = [...requiredStatuses(doc, '/things/{id}', 'patch').keys()].sort();
  assert.equal(patch, [
    '400',
    '401',
    '403',
    '404',
    '406',
    '409',
    '412',
    '413',
    '415',
    '422',
    '429',
    '503',
  ]);
  const list = [...requiredStatuses(doc, '/things', 'get').keys()].sort();
  assert.equal(list, ['400', '401', '403', '406', '413', '415', '422', '429', '503']);
  doc.paths['/things'].get['x-sunset'] = '2027-01-01';
  assert.ok(requiredStatuses(doc, '/things', 'get').has('410'));
  doc.paths['/things'].get.security = [];
  assert.not.ok(requiredStatuses(doc, '/things', 'get').has('401'), 'no authentication, no 401');
});

t('the check names each operation and status; --fix writes them in, once', ({ dir }) => {
  const file = path.join(dir, 'tiny.yaml');
  fs.writeFileSync(file, TINY);
  const run = (...args: string[]) =>
    spawnSync(process.execPath, ['scripts/statuses.ts', '--spec', file, ...args], {
      cwd: ROOT,
      encoding: 'utf8',
    });
  const check = run();
  assert.is(check.status, 1);
  assert.match(
    check.stderr,
    'updateThing (PATCH /things/{id}) does not declare 412: it takes If-Match',
  );
  assert.match(check.stderr, 'listThings (GET /things) does not declare default');

  const fixed = fixStatuses(TINY);
  const lines = fixed.text.split('\n');
  const at = lines.indexOf("        '200':");
  assert.equal(lines.slice(at - 1, at + 16), [
    '        # the one success',
    "        '200':",
    '          description: Updated.',
    "        '400': { $ref: '#/components/responses/BadRequest' }",
    "        '401': { $ref: '#/components/responses/Unauthorized' }",
    "        '403': { $ref: '#/components/responses/Forbidden' }",
    "        '404': { $ref: '#/components/responses/NotFound' }",
    "        '406': { $ref: '#/components/responses/NotAcceptable' }",
    "        '409': { $ref: '#/components/responses/Conflict' }",
    "        '412': { $ref: '#/components/responses/PreconditionFailed' }",
    "        '413': { $ref: '#/components/responses/PayloadTooLarge' }",
    "        '415': { $ref: '#/components/responses/UnsupportedMediaType' }",
    "        '422': { $ref: '#/components/responses/Unprocessable' }",
    "        '429': { $ref: '#/components/responses/TooManyRequests' }",
    "        '503': { $ref: '#/components/responses/ServiceUnavailable' }",
    "        default: { $ref: '#/components/responses/Error' }",
    '  /things:',
  ]);
  // The operation without `default` got its statuses after its last response.
  const list = YAML.parse(fixed.text).paths['/things'].get.responses;
  assert.equal(Object.keys(list), [
    '200',
    '400',
    '401',
    '403',
    '406',
    '413',
    '415',
    '422',
    '429',
    '503',
  ]);
  assert.equal(
    fixStatuses(fixed.text).added.map((m) => m.status),
    [],
  );

  const written = run('--fix');
  assert.is(written.status, 1, 'a missing default is not invented');
  assert.match(written.stdout, '20 responses written');
  assert.equal(
    written.stderr.trim().split('\n')[0],
    'listThings (GET /things) does not declare default: an unexpected failure (500)',
  );
});

t("the suite's contract checker refuses a status only `default` covers", () => {
  const spec = loadSpec();
  const error = {
    error: { code: 'unsupported_media_type', message: 'x', request_id: 'r', details: [] },
  };
  const checker = () => new ContractChecker(spec);
  checker().check('POST', '/api/v3/tags', 415, 'application/json', error);
  delete spec.paths['/tags'].post.responses['415'];
  assert.throws(
    () => checker().check('POST', '/api/v3/tags', 415, 'application/json', error),
    /status not declared by createTag \(only default covers it\)/,
  );
  // 500 is what `default` is for.
  checker().check('POST', '/api/v3/tags', 500, 'application/json', error);
});

t.run();
