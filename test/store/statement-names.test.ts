import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { dispatchSql as pgDispatch } from '../../src/store/postgres/dispatch-statements.js';
import { inputSql as pgInput } from '../../src/store/postgres/input-statements.js';
import { sql as pgSql } from '../../src/store/postgres/statements.js';
import { taskSql as pgTask } from '../../src/store/postgres/task-statements.js';
import { dispatchSql as liteDispatch } from '../../src/store/sqlite/dispatch-statements.js';
import { inputSql as liteInput } from '../../src/store/sqlite/input-statements.js';
import { taskSql as liteTask } from '../../src/store/sqlite/task-statements.js';

// The statements of both SQL stores are named one way (camelCase keys of a map per role), and
// gathered into one map per dialect: a name two roles shared would let one hide the other.

const STORE = fileURLToPath(new URL('../../src/store/', import.meta.url));
const CAMEL = /^[a-z][a-zA-Z0-9]*$/;

const roles: Record<string, Record<string, Readonly<Record<string, string>>>> = {
  sqlite: { task: liteTask, dispatch: liteDispatch, input: liteInput },
  postgres: { task: pgTask, dispatch: pgDispatch, input: pgInput },
};

describe('statement names', () => {
  for (const [dialect, maps] of Object.entries(roles)) {
    it(`${dialect}: each role's statements have camelCase names found in no other role`, () => {
      const names = Object.values(maps).flatMap((map) => Object.keys(map));
      expect(names.filter((name) => !CAMEL.test(name))).toEqual([]);
      expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
    });
  }

  it('postgres: the gathered map holds every role statement, unchanged', () => {
    expect(pgSql).toEqual({ ...pgTask, ...pgDispatch, ...pgInput });
  });

  it('no SQL text of a store is held in a SCREAMING_CASE constant', () => {
    const files = ['', 'sqlite', 'postgres', 'memory'].flatMap((dir) =>
      readdirSync(join(STORE, dir))
        .filter((name) => name.endsWith('.ts'))
        .map((name) => join(STORE, dir, name)),
    );
    const screaming = files.flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/const ([A-Z][A-Z0-9_]*) =\s*[`'"]\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b/g)].map((m) => `${file}: ${m[1]}`),
    );
    expect(screaming).toEqual([]);
  });
});
