import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory/memory-store.js';
import { artifactPath, CHROMIUM, CHROMIUM_ARGS, consoleWorld, HAS_CHROMIUM, SKIP_MESSAGE, type ConsoleWorld } from './console-world.js';

// The console behind the operator listener's token: without it, 401 and the token form (no
// cookie); a wrong token sets none; the right one sets an HttpOnly, SameSite=Strict cookie that
// opens the pages; a script sends it as a bearer token. A cancel needs the session's CSRF token.

if (!HAS_CHROMIUM) console.warn(SKIP_MESSAGE);

const TOKEN = 'console-secret-7f3a';

describe('the console behind a token, over HTTP', () => {
  let world: ConsoleWorld;
  beforeAll(async () => {
    world = await consoleWorld(new MemoryStore(), TOKEN);
  });
  afterAll(async () => {
    await world?.close();
  });

  it('answers 401 without the token and sets no cookie; the bearer token opens the API', async () => {
    const page = await fetch(`${world.url}/console`);
    expect([page.status, page.headers.get('set-cookie')]).toEqual([401, null]);
    expect(await page.text()).toContain('id="login"');
    const api = await fetch(`${world.url}/console/api/tasks`);
    expect([api.status, api.headers.get('www-authenticate')]).toEqual([401, 'Bearer']);
    expect((await fetch(`${world.url}/console/api/tasks`, { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
    const ok = await fetch(`${world.url}/console/api/tasks`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect([ok.headers.get('x-content-type-options'), ok.headers.get('referrer-policy'), ok.headers.get('cache-control')]).toEqual([
      'nosniff',
      'no-referrer',
      'no-store',
    ]);
    const wrong = await fetch(`${world.url}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: world.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'token=nope&next=/console',
    });
    expect([wrong.status, wrong.headers.get('set-cookie')]).toEqual([401, null]);
  });

  it('refuses a cancel without the CSRF token or from another origin', async () => {
    const taskId = await world.start('waiter');
    await world.waiting(taskId);
    const post = (headers: Record<string, string>, body: string) =>
      fetch(`${world.url}/console/tasks/${taskId}/cancel`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
        body,
      });
    const login = await fetch(`${world.url}/console/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: world.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${TOKEN}&next=/console`,
    });
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    expect((await post({ cookie, origin: world.url }, 'csrf=forged')).status).toBe(403);
    const confirm = await (await fetch(`${world.url}/console/tasks/${taskId}/cancel`, { headers: { cookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(confirm)![1]!;
    expect((await post({ cookie, origin: 'http://evil.example' }, `csrf=${csrf}`)).status).toBe(403);
    expect((await world.record(taskId)).status).toBe('working');
    expect((await post({ cookie, origin: world.url }, `csrf=${csrf}`)).status).toBe(303);
    expect((await world.settled(taskId, 'cancelled')).status).toBe('cancelled');
  });

  describe.skipIf(!HAS_CHROMIUM)('in Chromium', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    });
    afterAll(async () => {
      await browser?.close();
    });

    it('shows the token form, refuses a wrong token, and opens the console with the right one', async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const first = await page.goto(`${world.url}/console?status=working`);
      expect(first?.status()).toBe(401);
      await page.fill('#login input[name=token]', 'wrong');
      await Promise.all([page.waitForSelector('p.error[role=alert]'), page.click('#login button')]);
      expect(await context.cookies()).toEqual([]);
      await page.fill('#login input[name=token]', TOKEN);
      await Promise.all([page.waitForURL(/\/console\?status=working$/), page.click('#login button')]);
      await page.waitForSelector('#tasks');
      const [cookie] = await context.cookies();
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
      expect(await page.evaluate(() => (globalThis as unknown as { document: { cookie: string } }).document.cookie)).toBe('');
      await page.screenshot({ path: await artifactPath('token-list.png'), fullPage: true });
      await context.close();
    });
  });
});
