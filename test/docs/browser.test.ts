// A real browser (Debian's Chromium, headless, driven by playwright-core) opens /docs: Scalar's
// reference renders the v3 operations from what this server alone serves (no request leaves its
// origin, nothing breaks the page's Content-Security-Policy). Without /usr/bin/chromium the test
// says so loudly and passes; the rest of the suite does not depend on it.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { boot, type Booted } from '../helpers/app.ts';
import { withBrowser } from '../helpers/browser.ts';

const t = suite<{ b: Booted }>('reference page in a browser');
t.before(async (ctx) => {
  ctx.b = await boot();
});
t.after(async (ctx) => ctx.b.close());

t('/docs renders the v3 operations from local assets (headless Chromium)', async ({ b }) => {
  await withBrowser({}, async (context) => {
    const page = context.pages()[0] ?? (await context.newPage());
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    // A refused load (a CSP violation, a missing file) is a console error.
    page.on('console', (m) => m.type() === 'error' && problems.push(m.text()));
    await page.goto(b.url + '/docs');
    assert.is(await page.title(), 'School Platform API v3 reference');
    // As a reader would: open a tag group of the sidebar, find its operations by summary.
    for (const [group, names] of [
      ['Users', ['List users', 'Create a user']],
      ['Meta', ['Retrieve the release and deprecations']],
    ] as const) {
      await page
        .getByText(`Open Group - ${group}`, { exact: true })
        .first()
        .click({ timeout: 60_000 });
      for (const name of names) {
        await page.getByText(name, { exact: true }).first().waitFor({ timeout: 30_000 });
      }
    }
    assert.ok(requested.includes(`${b.url}/docs/v3/openapi.json`), requested.join('\n'));
    const elsewhere = requested.filter((u) => !u.startsWith(b.url + '/') && !u.startsWith('data:'));
    assert.equal(elsewhere, [], 'every request stays on this server');
    assert.equal(problems, []);
  });
});

t.run();
