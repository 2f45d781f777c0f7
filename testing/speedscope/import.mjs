// SPDX-License-Identifier: Apache-2.0
// Opens `bpfprof script` text in speedscope as a user does, and writes what
// speedscope read as its own JSON export: speedscope's page (the npm
// package's build, from this folder's node_modules) in headless Chromium,
// the text given to its Browse button, then its Export button; the download
// is the output. Prints speedscope's console lines (which importer it
// chose) on stdout. Exit 0 with the export written, 1 otherwise (the reason
// on stderr: an alert of speedscope's, a page error, a timeout).
//
//   node import.mjs SCRIPT_TEXT OUT_JSON [USER_DATA_DIR]
//
// BPFPROF_CHROMIUM names the browser (default /usr/bin/chromium).
import {chromium} from 'playwright-core';
import {mkdtempSync, rmSync} from 'node:fs';
import {tmpdir} from 'node:os';
import {dirname, join} from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';

const [input, output, profileArg] = process.argv.slice(2);
if (!input || !output) {
  console.error('usage: node import.mjs SCRIPT_TEXT OUT_JSON [USER_DATA_DIR]');
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const page_url = pathToFileURL(join(here, 'node_modules/speedscope/dist/release/index.html')).href;
const profile = profileArg ?? mkdtempSync(join(tmpdir(), 'bpfprof-speedscope-'));
const timeout_ms = 120000;

// A fresh profile and no background traffic: this machine's network is
// closed to all but the package registries.
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.BPFPROF_CHROMIUM || '/usr/bin/chromium',
  headless: true,
  acceptDownloads: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
let failure = null;
try {
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(timeout_ms);
  page.on('console', (m) => console.log(`speedscope console: ${m.text()}`));
  page.on('pageerror', (e) => { failure ??= `page error: ${e.message}`; });
  // speedscope says "Unrecognized format!" (or that the profile is empty) in an alert.
  page.on('dialog', async (d) => {
    failure ??= `speedscope alert: ${d.message()}`;
    await d.dismiss();
  });
  await page.goto(page_url);
  await page.setInputFiles('input#file', input);
  // The toolbar's Export appears once a profile is loaded.
  const exportButton = page.getByText(/Export$/).first();
  const deadline = Date.now() + timeout_ms;
  while (!failure && !(await exportButton.isVisible())) {
    if (Date.now() > deadline) throw new Error(`no profile loaded after ${timeout_ms} ms`);
    await page.waitForTimeout(100);
  }
  if (failure) throw new Error(failure);
  const [download] = await Promise.all([page.waitForEvent('download'), exportButton.click()]);
  await download.saveAs(output);
  if (failure) throw new Error(failure);
} catch (e) {
  failure ??= String(e && e.message ? e.message : e);
} finally {
  await context.close();
  if (!profileArg) rmSync(profile, {recursive: true, force: true});
}
if (failure) {
  console.error(`speedscope import failed: ${failure}`);
  process.exit(1);
}
