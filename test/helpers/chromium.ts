/**
 * Headless Chromium for the tests and benchmarks that open pages (serve's page, the HTML graph,
 * the serve benchmark): Debian's `/usr/bin/chromium` through playwright-core, with the flags
 * every caller wants, launched in one place. Callers close the browser in a `finally` or
 * `after` hook — `withChromium` does it for them.
 */
import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

/** Why pages cannot be opened here (for `skip`), or undefined when Chromium is installed. */
export const CHROMIUM_MISSING = existsSync(CHROMIUM)
  ? undefined
  : `${CHROMIUM} is not installed (Debian package chromium): the page was not opened`;

/** Headless, no sandbox (we run as root in CI), nothing fetched or updated behind our back. */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS] });
}

/** Runs `use` with a fresh browser, closed afterwards whether `use` succeeds or throws. */
export async function withChromium<T>(use: (browser: Browser) => Promise<T>): Promise<T> {
  const browser = await launchChromium();
  try {
    return await use(browser);
  } finally {
    await browser.close();
  }
}
