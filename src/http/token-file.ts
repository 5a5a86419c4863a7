import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { TasklatchError } from '../core/errors.js';
import { principalProblem } from '../core/principal.js';
import type { Principal } from '../tools/principal.js';
import { tokensAuthenticate, type HttpAuthenticate } from './auth-front.js';

const tokenFile = z.record(z.string().min(1), z.object({ tenant: z.string(), subject: z.string() }));

/**
 * A `tokens.json` (bearer token → `{ tenant, subject }`) read and checked; a bad file is an
 * INVALID_INPUT naming it, and a bad entry names its place in the file (1 for the first) and the
 * part of the principal that fails the core's check. The token itself is a secret: never quoted.
 */
export async function loadTokenFile(file: string): Promise<Map<string, Principal>> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (error) {
    throw new TasklatchError('INVALID_INPUT', `${file}: ${(error as Error).message}`);
  }
  const parsed = tokenFile.safeParse(raw);
  const entries = Object.keys(raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? raw : {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const [token, ...member] = issue?.path ?? [];
    const where = typeof token === 'string' ? `entry ${entries.indexOf(token) + 1}${member.length > 0 ? `, ${member.join('.')}` : ''}` : 'the file';
    throw new TasklatchError('INVALID_INPUT', `${file}: ${where}: ${issue?.message ?? 'invalid'}`);
  }
  const tokens = new Map(Object.entries(parsed.data));
  for (const [token, principal] of tokens) {
    const problem = principalProblem(principal);
    if (problem !== null) throw new TasklatchError('INVALID_INPUT', `${file}: entry ${entries.indexOf(token) + 1}: the ${problem.part} ${problem.problem}`);
  }
  return tokens;
}

export interface WatchedTokenFile {
  authenticate: HttpAuthenticate;
  close(): void;
}

/**
 * The tokens of a file, reloaded when its size or modification time changes (a stat every
 * `intervalMs`, default 1000: it works on every file system, where change events do not). A
 * file that no longer reads or parses keeps the last good tokens and is reported through
 * `onError`; a token removed from the file is refused from the next reload on.
 */
export async function watchTokenFile(
  file: string,
  options: { intervalMs?: number; onReload?: (count: number) => void; onError?: (error: TasklatchError) => void } = {},
): Promise<WatchedTokenFile> {
  let tokens = await loadTokenFile(file);
  let loading = Promise.resolve();
  const reload = (current: Stats, previous: Stats) => {
    if (current.mtimeMs === previous.mtimeMs && current.size === previous.size && current.ino === previous.ino) return;
    // Reloads run one after another, so a slow read never overwrites a newer one.
    loading = loading.then(async () => {
      try {
        tokens = await loadTokenFile(file);
        options.onReload?.(tokens.size);
      } catch (error) {
        options.onError?.(error as TasklatchError);
      }
    });
  };
  watchFile(file, { interval: options.intervalMs ?? 1000, persistent: false }, reload);
  return { authenticate: tokensAuthenticate(() => tokens), close: () => unwatchFile(file, reload) };
}
