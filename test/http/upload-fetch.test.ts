import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnServe, type ServeProcess } from '../support/serve-process.js';

const LIMIT = 64 * 1024;
let serve: ServeProcess;

beforeAll(async () => {
  serve = await spawnServe(['--store', 'memory', '--max-body-bytes', String(LIMIT)]);
});

afterAll(async () => {
  await serve.stop();
});

describe('an over-limit body sent with fetch', () => {
  it.each([2 * LIMIT, 1_000_000, 8_000_000])('of %i bytes, written whole, is answered 413 (not a broken pipe)', async (size) => {
    const body = Buffer.alloc(size, 0x20);
    for (let round = 0; round < 3; round += 1) {
      const res = await fetch(serve.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body,
      });
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(`at most ${LIMIT} bytes`);
    }
  });
});
