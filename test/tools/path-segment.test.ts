import { mkdir, mkdtemp, writeFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve, sep } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pathSegmentOf } from '../../src/tools/path-segment.js';
import { hostileText } from '../support/hostile-text.js';

const ROOT = resolve('/srv/exports');

/** Where a segment lands under ROOT: must be a direct child of it. */
function landsInside(segment: string): boolean {
  const path = resolve(ROOT, segment);
  return dirname(path) === ROOT && relative(ROOT, path) === segment && !segment.includes(sep) && !segment.includes('/');
}

describe('pathSegmentOf', () => {
  it.each([
    ['acme', 'acme'],
    ['acme_eu', 'acme_eu'],
    ['globex-2.eu', 'globex-2.eu'],
    ['task_0b7c9c1e-5a3f-4d2e-9c55-2f0e7a1b3c4d', 'task_0b7c9c1e-5a3f-4d2e-9c55-2f0e7a1b3c4d'],
  ])('keeps %j as it is', (text, segment) => {
    expect(pathSegmentOf(text)).toBe(segment);
  });

  it.each([
    ['..', /^__~[0-9a-f]{32}$/],
    ['.', /^_~[0-9a-f]{32}$/],
    ['', /^_~[0-9a-f]{32}$/],
    ['.hidden', /^_hidden~[0-9a-f]{32}$/],
    ['trailing.', /^trailing_~[0-9a-f]{32}$/],
    ['acme:eu', /^acme_eu~[0-9a-f]{32}$/],
    ['Acme', /^acme~[0-9a-f]{32}$/],
    ['../../etc', /^______etc~[0-9a-f]{32}$/],
    ['a/b', /^a_b~[0-9a-f]{32}$/],
    ['a\\b', /^a_b~[0-9a-f]{32}$/],
    ['con', /^con~[0-9a-f]{32}$/],
    ['nul.txt', /^nul_txt~[0-9a-f]{32}$/],
    ['u\ud800', /^u_~[0-9a-f]{32}$/],
    ['x'.repeat(65), /^x{48}~[0-9a-f]{32}$/],
    ['\u0130'.repeat(60), /^(i_){24}~[0-9a-f]{32}$/],
  ])('escapes %j and adds a digest', (text, pattern) => {
    expect(pathSegmentOf(text)).toMatch(pattern);
  });

  it('tells apart what a lossy escape would join', () => {
    const groups = [
      ['acme:eu', 'acme_eu', 'acme.eu', 'acme/eu', 'ACME_EU', 'Acme_eu'],
      ['u\ud800', 'u\udc00', 'u\ufffd', 'u_'],
      ['\u00e9', 'e\u0301'],
      [`${'t'.repeat(120)}a`, `${'t'.repeat(120)}b`, 't'.repeat(120), 't'.repeat(121)],
      ['.', '..', '_', '__', ''],
    ];
    for (const group of groups) expect(new Set(group.map(pathSegmentOf)).size).toBe(group.length);
  });

  it('distinct texts give distinct segments, in any case, and every segment is a direct child of its root', () => {
    fc.assert(
      fc.property(hostileText, hostileText, (a, b) => {
        const [x, y] = [pathSegmentOf(a), pathSegmentOf(b)];
        for (const s of [x, y]) {
          expect(landsInside(s)).toBe(true);
          // lowercase ASCII only: the same on case-insensitive and normalizing file systems
          expect(s).toMatch(/^[a-z0-9._~-]{1,81}$/);
          expect(s).not.toMatch(/^\.|\.$/);
        }
        expect(x === y).toBe(a === b);
        expect(pathSegmentOf(a.toUpperCase()) === x).toBe(a.toUpperCase() === a);
      }),
      { numRuns: 1000 },
    );
  });

  it('segments of distinct texts never meet on a real file system', async () => {
    const root = await mkdtemp(join(tmpdir(), 'tasklatch-segments-'));
    const texts = ['acme', 'ACME', 'Acme', 'acme:eu', 'acme_eu', '.', '..', '\u00e9', 'e\u0301', 'u\ud800', 'u\udc00', 'x'.repeat(300), `${'x'.repeat(300)}y`];
    for (const [i, text] of texts.entries()) {
      const dir = join(root, pathSegmentOf(text));
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'owner'), String(i), { flag: 'wx' });
    }
    expect((await readdir(root)).length).toBe(texts.length);
  });
});
