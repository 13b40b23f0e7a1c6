// Debian's Chromium, headless, driven by playwright-core, for the tests that need a real browser.
// Without /usr/bin/chromium they say so loudly and pass; the rest of the suite does not need it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { BrowserContext } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * Runs `fn` in a fresh headless Chromium profile, closed and removed afterwards. Returns false
 * (after printing a SKIPPED banner) when Chromium is not installed.
 */
export async function withBrowser(
  options: { locale?: string },
  fn: (context: BrowserContext) => Promise<void>,
): Promise<boolean> {
  if (!fs.existsSync(CHROMIUM)) {
    const bar = '!'.repeat(78);
    console.log(
      `\n${bar}\n!! SKIPPED: browser test: ${CHROMIUM} is missing (apt-get install -y chromium)\n${bar}\n`,
    );
    return false;
  }
  const { chromium } = await import('playwright-core');
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'school-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    timeout: 60_000,
    ...options,
  });
  try {
    await fn(context);
  } finally {
    await context.close();
    fs.rmSync(profile, { recursive: true, force: true });
  }
  return true;
}
