import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The built store the children import; `npm test` builds before vitest runs. */
export const DIST_STORE_URL = new URL('../../dist/store/sqlite/store.js', import.meta.url);
export const distBuilt = (): boolean => existsSync(fileURLToPath(DIST_STORE_URL));

const CHILD_SOURCE = new URL('./sqlite-race-child.ts', import.meta.url);

/**
 * Writes the child as `.mjs` into `dir`. Node 20 cannot run TypeScript, and a checked-in `.mjs`
 * would sit outside the lint and type-check project; transpiling (types erased, nothing
 * bundled) keeps the one source checked like every other file.
 */
export async function writeChildScript(dir: string): Promise<string> {
  const source = await readFile(CHILD_SOURCE, 'utf8');
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
  });
  const path = join(dir, 'sqlite-race-child.mjs');
  await writeFile(path, outputText);
  return path;
}

interface Message {
  type: string;
  [key: string]: unknown;
}

/** One child process and its IPC messages, read in order. */
class ChildLink {
  private readonly queue: Message[] = [];
  private readonly waiters: ((message: Message | Error) => void)[] = [];
  /** Set when the child exited with nobody waiting; every later `next` fails with it. */
  private failure: Error | null = null;
  private stderr = '';
  readonly exited: Promise<number | null>;

  constructor(private readonly child: ChildProcess) {
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    child.on('message', (message) => this.push(message as Message));
    this.exited = new Promise((resolve) => {
      child.on('exit', (code) => {
        this.push(new Error(`child exited with ${code} before replying\n${this.stderr}`));
        resolve(code);
      });
    });
  }

  private push(item: Message | Error): void {
    const waiter = this.waiters.shift();
    if (waiter !== undefined) waiter(item);
    else if (!(item instanceof Error)) this.queue.push(item);
    else this.failure = item;
  }

  async next(type: string): Promise<Message> {
    const queued = this.queue.shift();
    const item = queued ?? this.failure ?? (await new Promise<Message | Error>((resolve) => this.waiters.push(resolve)));
    if (item instanceof Error) throw item;
    if (item.type !== type) throw new Error(`expected ${type} from child, got ${JSON.stringify(item).slice(0, 200)}`);
    return item;
  }

  send(message: unknown): void {
    this.child.send(message as object);
  }
}

/**
 * Starts one child per argument list, waits until every one is ready, releases them all at one
 * instant on the shared clock (`slotMs` apart per trial), and returns each child's final message
 * of type `done`, in argument order.
 */
export async function runChildren(script: string, argLists: readonly string[][], done: string, slotMs = 0): Promise<Message[]> {
  const links = argLists.map((args) => new ChildLink(spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'inherit', 'pipe', 'ipc'] })));
  await Promise.all(links.map((link) => link.next('ready')));
  // Far enough ahead that every child has the message before the instant arrives.
  const startAt = performance.timeOrigin + performance.now() + 100;
  for (const link of links) link.send({ type: 'go', startAt, slotMs });
  const replies = await Promise.all(links.map((link) => link.next(done)));
  const codes = await Promise.all(links.map((link) => link.exited));
  if (codes.some((code) => code !== 0)) throw new Error(`children exited with ${codes.join(', ')}`);
  return replies;
}
