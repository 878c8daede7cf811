// A real browser for the dashboard suites: Debian's chromium (scripts/setup installs it) driven
// headless by puppeteer-core. Collects what would show in the browser's console as a failure
// (console errors, uncaught page errors, failed requests) and saves screenshots as test artifacts.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const chromiumPath = process.env.CELLSERVE_CHROMIUM || '/usr/bin/chromium';

// Where screenshots go: $CELLSERVE_E2E_ARTIFACTS, else build/e2e-artifacts/<suite>/ in the checkout.
export function artifactsDir(suite) {
  const root = process.env.CELLSERVE_E2E_ARTIFACTS ||
    path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../build/e2e-artifacts');
  const dir = path.join(root, suite);
  mkdirSync(dir, { recursive: true });
  return dir;
}

// puppeteer-core, or null when it is not installed (the suite then skips, saying so).
export async function loadPuppeteer() {
  try {
    return (await import('puppeteer-core')).default;
  } catch {
    return null;
  }
}

// Why a browser suite cannot run here, or false.
export async function browserSkipReason() {
  if (!existsSync(chromiumPath)) return `no chromium at ${chromiumPath} (scripts/setup installs Debian's chromium)`;
  if (!(await loadPuppeteer())) return 'puppeteer-core is not installed (scripts/setup runs npm ci in tests/)';
  return false;
}

// A headless browser: .browser, .page (at `viewport`), .problems (every console error, page error
// and failed request, as text), .screenshot(name) (saved under `dir`, path returned), .close().
export async function openBrowser(dir, viewport = { width: 1280, height: 800 }) {
  const puppeteer = await loadPuppeteer();
  const args = ['--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'];
  if (process.getuid && process.getuid() === 0) args.push('--no-sandbox');
  const browser = await puppeteer.launch({ executablePath: chromiumPath, headless: true, args });
  const problems = [];
  const watch = (page) => {
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()} (${m.location()?.url || 'no url'})`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`));
    page.on('dialog', (d) => d.accept()); // confirmations (lib.js confirmThen) are accepted
  };
  const page = await browser.newPage();
  await page.setViewport(viewport);
  watch(page);
  return {
    browser,
    page,
    problems,
    watch,
    async screenshot(name, target = page) {
      const file = path.join(dir, `${name}.png`);
      await target.screenshot({ path: file, fullPage: true });
      return file;
    },
    close: () => browser.close(),
  };
}

// The text of every element matching `selector`, or [] (the page may be between renders), and of
// the first one.
export const texts = (page, selector) => page.$$eval(selector, (els) => els.map((e) => e.textContent.trim()));
export const text = async (page, selector) => (await texts(page, selector))[0];
