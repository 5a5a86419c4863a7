import { chromium, type Browser, type Page } from 'playwright-core';
import { sendEvent } from '../../src/runtime/requests/send-event.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postgresHarness, sqliteHarness } from '../support/stores.js';
import {
  artifactPath,
  CHROMIUM,
  CHROMIUM_ARGS,
  consoleWorld,
  HAS_CHROMIUM,
  HOSTILE,
  hostileRecords,
  SKIP_MESSAGE,
  type ConsoleWorld,
} from './console-world.js';

// The web console driven in Debian's Chromium over SQLite and PostgreSQL: the list and its
// filters, finding a task by id, a task's steps in order, a running task's page following it
// without a reload, a cancel from the page, and hostile stored text shown as text.

if (!HAS_CHROMIUM) console.warn(SKIP_MESSAGE);

/** A page that records dialogs, requests off the listener and script errors. */
async function watchedPage(browser: Browser, world: ConsoleWorld) {
  const page = await browser.newPage();
  const dialogs: string[] = [];
  const offsite: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on('request', (request) => {
    if (!request.url().startsWith(world.url)) offsite.push(request.url());
  });
  const pwned = () => page.evaluate(() => (globalThis as unknown as { __pwned?: unknown }).__pwned);
  return { page, dialogs, offsite, pwned };
}

/** The task ids of the list's rows, in order. */
const rowIds = (page: Page) => page.locator('#tasks tbody td.id').allTextContents();

const cellTexts = (page: Page, selector: string) => page.locator(selector).allTextContents();

describe.skipIf(!HAS_CHROMIUM)('the web console in Chromium', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
  });

  describe.each([sqliteHarness, postgresHarness])('on $name', (harness) => {
    let world: ConsoleWorld;
    const ids: Record<string, string> = {};
    beforeAll(async () => {
      world = await consoleWorld(await harness.open(`console_${harness.name}`));
      await world.store.seed(hostileRecords(Date.now()));
      ids.stepper = await world.start('stepper', 'acme/alice');
      ids.echo = await world.start('echo_hostile', 'initech/eve');
      ids.waiter = await world.start('waiter', 'globex/carol');
      await world.settled(ids.stepper, 'completed');
      await world.settled(ids.echo, 'completed');
      await world.waiting(ids.waiter);
    });
    afterAll(async () => {
      await world?.close();
    });

    it('lists the tasks, filters them, finds one by id and shows its steps in order', async () => {
      const { page, dialogs, offsite, pwned } = await watchedPage(browser, world);
      await page.goto(`${world.url}/console`);
      await page.waitForSelector('#tasks tbody tr');
      const listed = await rowIds(page);
      expect(listed).toEqual(expect.arrayContaining([ids.stepper, ids.echo, ids.waiter, 'failed-import', `hostile-${HOSTILE.img}`]));
      await page.screenshot({ path: await artifactPath(`list-${harness.name}.png`), fullPage: true });

      await page.selectOption('select[name=status]', 'failed');
      await Promise.all([page.waitForURL(/status=failed/), page.click('#filters button')]);
      expect(await rowIds(page)).toEqual(['failed-import']);

      await page.goto(`${world.url}/console?state=event`);
      expect(await rowIds(page)).toEqual([ids.waiter]);
      await page.goto(`${world.url}/console?tool=stepper&tenant=acme`);
      expect(await rowIds(page)).toEqual([ids.stepper]);
      await page.goto(`${world.url}/console?tenant=nobody`);
      await page.waitForSelector('#empty');

      await page.fill('header input[name=id]', ids.stepper!);
      await Promise.all([page.waitForURL(/\/console\/tasks\//), page.click('header form.find button')]);
      expect(await page.textContent('#task-id')).toBe(ids.stepper);
      expect(await page.textContent('#status')).toBe('completed');
      expect(await cellTexts(page, '#steps .step-name')).toEqual(['fetch-orders', 'transform-rows', 'upload-report']);
      expect(await page.textContent('#result')).toContain('uploaded 6 rows');
      await page.screenshot({ path: await artifactPath(`task-${harness.name}.png`), fullPage: true });

      expect([dialogs, offsite, await pwned()]).toEqual([[], [], undefined]);
      await page.close();
    });

    it('shows hostile ids, tools, tenants and results as text, and runs none of them', async () => {
      const { page, dialogs, offsite, pwned } = await watchedPage(browser, world);
      await page.goto(`${world.url}/console`);
      await page.waitForSelector('#tasks tbody tr');
      expect(await page.locator('#tasks tbody').textContent()).toContain(HOSTILE.script);
      expect(await page.locator('img, svg, script:not([src])').count()).toBe(0);

      await page.goto(`${world.url}/console/tasks/${encodeURIComponent(ids.echo!)}`);
      expect(await page.textContent('#result')).toContain(`${HOSTILE.script}${HOSTILE.img}${HOSTILE.svg}`);
      await page.goto(`${world.url}/console?id=${encodeURIComponent(`hostile-${HOSTILE.img}`)}`);
      expect(await page.textContent('#task-id')).toBe(`hostile-${HOSTILE.img}`);
      expect(await page.textContent('#tool')).toBe(HOSTILE.script);
      expect(await page.textContent('#result')).toContain(HOSTILE.img);
      expect(await page.locator('img, svg, script:not([src])').count()).toBe(0);
      await page.screenshot({ path: await artifactPath(`hostile-${harness.name}.png`), fullPage: true });
      expect([dialogs, offsite, await pwned()]).toEqual([[], [], undefined]);
      await page.close();
    });

    it("follows a running task's page without a reload, and cancels a task from its page", async () => {
      const { page, dialogs, pwned } = await watchedPage(browser, world);
      await page.goto(`${world.url}/console/tasks/${encodeURIComponent(ids.waiter!)}`);
      expect(await page.textContent('#status')).toBe('working');
      expect(await cellTexts(page, '#steps .step-name')).toEqual(['prepare', 'build']);
      await page.evaluate(() => ((globalThis as unknown as { __sameDocument: boolean }).__sameDocument = true));
      const sent = await sendEvent(world.runtime, null, { taskId: ids.waiter!, type: 'ci.finished', payload: { build: 42 }, correlationId: 'operator:test' });
      expect(sent).toMatchObject({ kind: 'sent' });
      await page.waitForSelector('#status.status-completed');
      expect(await cellTexts(page, '#steps .step-name')).toEqual(['prepare', 'build', 'deploy']);
      expect(await page.evaluate(() => (globalThis as unknown as { __sameDocument?: boolean }).__sameDocument)).toBe(true);
      await page.waitForSelector('body[data-live-stopped=true]');

      const doomed = await world.start('waiter', 'globex/carol');
      await world.waiting(doomed);
      await page.goto(`${world.url}/console/tasks/${encodeURIComponent(doomed)}`);
      await Promise.all([page.waitForURL(/\/cancel$/), page.click('#cancel')]);
      await Promise.all([page.waitForURL(new RegExp(`${encodeURIComponent(doomed)}$`)), page.click('#confirm')]);
      await page.waitForSelector('#status.status-cancelled');
      expect((await world.settled(doomed, 'cancelled')).status).toBe('cancelled');
      const trail = await world.store.auditTrail({ taskId: doomed });
      expect(trail.find((l) => l.decision === 'CANCEL_TASK')).toMatchObject({ authKey: 'globex/carol', detail: 'by operator' });
      expect((await cellTexts(page, '#audit tbody tr')).some((row) => row.includes('CANCEL_TASK') && row.includes('by operator'))).toBe(true);
      expect([dialogs, await pwned()]).toEqual([[], undefined]);
      await page.close();
    });
  });
});
