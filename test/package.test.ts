import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, ROOT } from './support/cli.js';
import { startUnderNpx, stopsWithItsLauncher, type NpxProcess } from './support/npx-process.js';
import { rpc, settle } from './support/stateless.js';

const run = promisify(execFile);

// The package as a user gets it: `npm pack` of the built tree, installed from the tarball into a
// fresh app, its binary started through npx. Nothing of the repository is on the app's path.
describe('the packed package, installed into a fresh app', () => {
  let dir: string;
  let app: string;
  let tarball: string;
  let files: string[];
  let served: NpxProcess | undefined;

  beforeAll(async () => {
    if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run 'npm run build' first (npm test does)`);
    dir = await mkdtemp(join(tmpdir(), 'tasklatch-package-'));
    // Packs the dist/ that `npm test` built; running prepack here would rebuild dist/ under the
    // other test files of the run.
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], { cwd: ROOT });
    const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string }> }>;
    tarball = join(dir, info!.filename);
    files = info!.files.map((f) => f.path);
    app = join(dir, 'app');
    mkdirSync(app);
    await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', private: true, type: 'module' }));
    await run('npm', ['install', tarball, '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: app });
    // better-sqlite3 (optional) is there without its binary: --ignore-scripts skipped its install
    // script. Node 22 and 24 serve SQLite on node:sqlite then, which is the path tested there.
    // Node 20 has no node:sqlite: it gets the repository's build of the same pinned version, for
    // the same Node, which is what that script makes (it fetches a prebuilt binary from GitHub or
    // compiles SQLite: minutes on a machine where GitHub does not answer).
    const version = (root: string) => (JSON.parse(readFileSync(join(root, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string }).version;
    expect(version(app)).toBe(version(ROOT));
    if (!isBuiltin('node:sqlite')) {
      mkdirSync(join(app, 'node_modules/better-sqlite3/build/Release'), { recursive: true });
      copyFileSync(
        join(ROOT, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
        join(app, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node'),
      );
    }
  }, 120_000);

  afterAll(() => {
    served?.kill();
    rmSync(dir, { recursive: true, force: true });
  });

  it('ships the license, the examples and built code without dangling source maps', () => {
    for (const file of [
      'LICENSE',
      'README.md',
      'package.json',
      'dist/cli/main.js',
      'dist/index.d.ts',
      'examples/own-tools/tools.mjs',
      'examples/tasks-2026-client.mjs',
    ])
      expect(files).toContain(file);
    expect(files.some((f) => f.startsWith('migrations/sqlite/') && f.endsWith('.sql'))).toBe(true);
    // No maps: they would point at src/, which is not shipped.
    expect(files.filter((f) => f.endsWith('.map') || f.startsWith('src/') || f.startsWith('test/'))).toEqual([]);
    expect(readFileSync(join(app, 'node_modules/tasklatch/LICENSE'), 'utf8')).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} tasklatch contributors\n/);
  });

  it('names its repository, and runs nothing at install', () => {
    const manifest = JSON.parse(readFileSync(join(app, 'node_modules/tasklatch/package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest).toMatchObject({
      license: 'MIT',
      repository: { type: 'git', url: 'git+https://github.com/tasklatch/tasklatch.git' },
      homepage: 'https://github.com/tasklatch/tasklatch#readme',
      bugs: { url: 'https://github.com/tasklatch/tasklatch/issues' },
    });
    // A consumer's install must never need the build tools: the build runs at pack time.
    const scripts = manifest.scripts as Record<string, string>;
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) expect(scripts).not.toHaveProperty(hook);
    expect(scripts.prepack).toMatch(/npm run build/);
  });

  it('resolves its library entries in the app: the root, tasklatch/core and tasklatch/replay', async () => {
    const script = [
      "const root = await import('tasklatch');",
      "const core = await import('tasklatch/core');",
      "const replay = await import('tasklatch/replay');",
      'console.log(JSON.stringify([typeof root.createRuntime, typeof core.decideCreate, typeof replay.runReplay, root.decideCreate === undefined]));',
    ].join(' ');
    const out = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: app });
    expect(JSON.parse(out.stdout)).toEqual(['function', 'function', 'function', true]);
  });

  it('says its version from the installed package.json, in another directory than the package', async () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const out = await run(process.execPath, [join(app, 'node_modules/tasklatch/dist/cli/main.js'), '--version'], { cwd: dir });
    expect(out.stdout.trim()).toBe(version);
  });

  it('serves the demo tools on SQLite through npx, runs a task to completed, and stops on SIGTERM to npx', async () => {
    served = await startUnderNpx(['serve', '--http', '127.0.0.1:0', '--store', 'sqlite:./tasks.db'], app);
    const created = await rpc(served.url, 'tools/call', { name: 'export_ledger', arguments: { month: '2026-06', rows: 30 } });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    const done = await settle(served.url, created.result!.taskId as string, {});
    expect(done).toMatchObject({ status: 'completed', result: { structuredContent: { rows: 30 } } });
    expect(existsSync(join(app, 'tasks.db'))).toBe(true);

    // The example the README runs against the installed package.
    const example = await run(process.execPath, [join(app, 'node_modules/tasklatch/examples/tasks-2026-client.mjs'), served.url], { cwd: app });
    expect(example.stdout).toMatch(/status: completed/);

    const stopped = await stopsWithItsLauncher(served, 'SIGTERM');
    expect(stopped).toEqual({ remaining: [], portOpen: false });
  }, 60_000);

  it("runs the README's tools module as written", async () => {
    const readme = readFileSync(join(app, 'node_modules/tasklatch/README.md'), 'utf8');
    const module = /```js\n\/\/ tools\.mjs\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(module).toBeDefined();
    await writeFile(join(app, 'tools.mjs'), module!);
    served = await startUnderNpx(['serve', '--http', '127.0.0.1:0', '--store', 'sqlite:./own.db', '--tools', './tools.mjs'], app);
    const listed = await rpc(served.url, 'tools/list');
    expect((listed.result?.tools as Array<{ name: string }>).map((t) => t.name)).toEqual(['slow_sum']);
    const created = await rpc(served.url, 'tools/call', { name: 'slow_sum', arguments: { a: 2, b: 3 } });
    const done = await settle(served.url, created.result!.taskId as string, {});
    expect(done).toMatchObject({ status: 'completed', result: { structuredContent: { sum: 5 } } });
    expect(await stopsWithItsLauncher(served, 'SIGTERM')).toEqual({ remaining: [], portOpen: false });
  }, 60_000);
});
