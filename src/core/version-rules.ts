import { createHash } from 'node:crypto';
import { TasklatchError } from './errors.js';
import type { Millis } from './types.js';

/**
 * Tool versions: which code may run a task. Every task records the version of its tool when it
 * was admitted (`TaskRecord.toolVersion`); every worker announces, through the store, the
 * version of each tool it runs and renews the announcement while it lives. A worker of version
 * `v` of tool T claims a task of T when
 *
 * 1. the task's version is `v` (its own code);
 * 2. the task has no version (stored before versions were): any worker of T may run it;
 * 3. no live worker announces the task's version for T, and `v` is the newest live version of T.
 *
 * So during a rolling deploy the old workers drain the old tasks and the new ones take the new
 * tasks; once the last old worker is gone (stopped, or silent for `silenceMs`) its tasks go to
 * the newest code. A task of a version some live worker announces is never taken by another
 * version: it waits for its own.
 */

/** How long a worker's announcement counts after its last renewal, unless configured (30 s). */
export const DEFAULT_VERSION_SILENCE_MS = 30_000;

/** Longest explicit version: it is stored with every task and printed in every listing. */
export const TOOL_VERSION_MAX = 100;

/** Hex characters of a default version: 64 bits of SHA-256, short enough to print, wide enough never to collide by chance. */
export const DEFAULT_VERSION_CHARS = 16;

// Control, format, separator and unassigned code points, lone surrogates: a version holding one
// would not print, and a newline would break the (tool, version) keys a claim compares.
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cn}\p{Cs}]/u;

/**
 * An explicit tool version, checked: 1 to `TOOL_VERSION_MAX` characters, printable, no leading or
 * trailing space (`v2 ` and `v2` would be two versions no one can tell apart in a listing).
 */
export function checkToolVersion(value: unknown, source = 'tool version'): string {
  if (typeof value !== 'string') throw new TasklatchError('INVALID_INPUT', `${source} must be a string`);
  if (value.length === 0) throw new TasklatchError('INVALID_INPUT', `${source} must not be empty`);
  if ([...value].length > TOOL_VERSION_MAX) throw new TasklatchError('INVALID_INPUT', `${source} must be at most ${TOOL_VERSION_MAX} characters`);
  if (UNPRINTABLE.test(value)) throw new TasklatchError('INVALID_INPUT', `${source} ${JSON.stringify(value)} holds a character that does not print`);
  if (value.trim() !== value) throw new TasklatchError('INVALID_INPUT', `${source} ${JSON.stringify(value)} must not start or end with a space`);
  return value;
}

/**
 * The version of a tool that names none: the first `DEFAULT_VERSION_CHARS` hex characters of the
 * SHA-256 of its handler's source text and its definition digest (`toolDigest`: name, schemas,
 * execution). The same code gives the same version in every process, so that workers of one
 * build agree without configuration, and any edit of the handler or its schemas makes a new one.
 * Code the handler calls (modules it imports) is not part of it: a tool whose behaviour changes
 * there names its version explicitly.
 */
export function defaultToolVersion(handlerSource: string, definitionDigest: string): string {
  return createHash('sha256').update(definitionDigest, 'utf8').update('\n').update(handlerSource, 'utf8').digest('hex').slice(0, DEFAULT_VERSION_CHARS);
}

/** One worker's announcement of one tool's version, as the store keeps it. */
export interface VersionAnnouncement {
  app: string;
  tool: string;
  version: string;
  workerId: string;
  /** When this worker first announced this version (its clock). */
  firstSeen: Millis;
  /** Its latest renewal. */
  lastSeen: Millis;
}

/** Whether an announcement still counts at `now`: renewed within the last `silenceMs`. */
export function isLiveAnnouncement(announcement: Pick<VersionAnnouncement, 'lastSeen'>, now: Millis, silenceMs: number): boolean {
  return announcement.lastSeen > now - silenceMs;
}

/**
 * The live versions of `tool`, newest first: each version's age is the earliest `firstSeen` of
 * its live announcements (when that code first came up, whichever of its workers restarted
 * since); the newest is the one that came up last; equal ages go by the greater version text, so
 * that every worker reading the same announcements names the same newest.
 */
export function liveVersionsOf(announcements: readonly VersionAnnouncement[], tool: string, now: Millis, silenceMs: number): string[] {
  const since = new Map<string, Millis>();
  for (const a of announcements) {
    if (a.tool !== tool || !isLiveAnnouncement(a, now, silenceMs)) continue;
    const seen = since.get(a.version);
    if (seen === undefined || a.firstSeen < seen) since.set(a.version, a.firstSeen);
  }
  return [...since.entries()].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? 1 : x[0] > y[0] ? -1 : 0)).map(([version]) => version);
}

/**
 * What a claimer of one tool may take, by task version: its own version; and, when `newest`,
 * every version not in `live` (the versions some live worker announces, its own included).
 */
export interface ToolVersionGrant {
  own: string;
  newest: boolean;
  live: readonly string[];
}

/** A claimer's grants by tool name (`ClaimInput.versions`); a map, so that no tool name meets an object's own keys. */
export type VersionGrants = ReadonlyMap<string, ToolVersionGrant>;

/**
 * The grants of a worker running `own` (tool → its version), from the announcements it read at
 * `now`. Its own announcement counts as live even when the read missed it (written after the
 * read, or lost): a worker always runs its own version's tasks.
 */
export function decideVersionGrants(
  own: ReadonlyMap<string, string>,
  announcements: readonly VersionAnnouncement[],
  now: Millis,
  silenceMs: number,
): VersionGrants {
  const grants = new Map<string, ToolVersionGrant>();
  for (const [tool, version] of own) {
    const live = liveVersionsOf(announcements, tool, now, silenceMs);
    // Absent from the read: it came up now, so it is the newest.
    if (!live.includes(version)) live.unshift(version);
    grants.set(tool, { own: version, newest: live[0] === version, live });
  }
  return grants;
}

/**
 * Whether a task of version `taskVersion` may be claimed under `grant` (the rule above). A
 * claimer that states grants but none for the task's tool takes only its tasks without a
 * version: it announced no version of that tool, so it is no heir of any (the SQL stores'
 * restatement, `versionGrantLists`, says the same).
 */
export function mayClaimVersion(taskVersion: string | null, grant: ToolVersionGrant | undefined): boolean {
  if (taskVersion === null) return true;
  if (grant === undefined) return false;
  return taskVersion === grant.own || (grant.newest && !grant.live.includes(taskVersion));
}

/** A (tool, version) pair as one text, as the SQL stores compare it: a version never holds a newline. */
export function versionKey(tool: string, version: string): string {
  return `${tool}\n${version}`;
}

/**
 * The grants as three lists, for a store that restates `mayClaimVersion` in SQL: `own` the
 * claimer's (tool, version) keys, `newest` the tools it is the newest live version of, `live` the
 * keys of the live versions of those tools. A task of (T, v) is claimable when it has no version,
 * its key is in `own`, or T is in `newest` and its key is not in `live`.
 */
export function versionGrantLists(grants: VersionGrants): { own: string[]; newest: string[]; live: string[] } {
  const lists = { own: [] as string[], newest: [] as string[], live: [] as string[] };
  for (const [tool, grant] of grants) {
    lists.own.push(versionKey(tool, grant.own));
    if (!grant.newest) continue;
    lists.newest.push(tool);
    for (const version of grant.live) lists.live.push(versionKey(tool, version));
  }
  return lists;
}
