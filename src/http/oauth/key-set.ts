import { createLocalJWKSet, errors, type JWTVerifyGetKey } from 'jose';
import { TasklatchError } from '../../core/errors.js';

/** How the issuer's published keys are fetched and kept. */
export interface KeySetOptions {
  /** A `kid` found missing from a fetched key set is refused without fetching again for this long. */
  missingKidMs: number;
  /** At most `fetches` fetches of the key set in any `windowMs`, whatever the tokens name. */
  budget: { fetches: number; windowMs: number };
  /** Keys older than this are fetched again before use (a key the issuer withdrew stops verifying). */
  maxAgeMs: number;
  /** A fetch that has not answered in full after this long has failed. */
  timeoutMs: number;
  /** The clock, in ms (tests pass their own). */
  now?: () => number;
}

/** What a key set answers a request with when it cannot fetch: `Retry-After` for an ordinary failure. */
const RETRY_AFTER_MS = 5000;
/** Enough distinct missing kids for a flood; beyond it the oldest are forgotten first. */
const MISSING_ENTRIES = 10_000;

/**
 * The issuer's JSON Web Key Set, as a key resolver for `jwtVerify`. jose's `createRemoteJWKSet`
 * is not used: its cooldown is one timestamp for the whole set (one unknown `kid` every 30 s kept a
 * newly published key refused), and its fetch failures (HTTP 500, a body that is not JSON) are
 * plain `JOSEError`s, the class every refusal of a token shares, so they read as bad tokens. Here a
 * fetch is ours (`createLocalJWKSet` only reads a set that arrived whole), and:
 *
 * - a fetch that fails (unreachable, reset, timed out, not HTTP 200, not JSON, not a key set) and
 *   a published key that cannot be imported throw a `TasklatchError` (`data.retryAfterMs`), never
 *   a jose error: the request is answered 503, the token gets no verdict;
 * - a `kid` (with its `alg`) missing from the keys fetches them again, once per `missingKidMs` per
 *   kid, so one unknown kid cannot delay another's first use; the fetch it waits for started after
 *   it was found missing (a fetch already under way may predate the key's publication), and
 *   concurrent misses share one fetch; a published key that cannot be imported fetches again too;
 * - every fetch counts against `budget`: past it a miss is answered 503 with the time until the
 *   budget frees, not 401, since its kid was never looked for;
 * - keys older than `maxAgeMs` are fetched again before use; while that fetch fails (or the budget
 *   is spent) the keys last fetched stay in use rather than refusing every token during an outage.
 */
export function createKeySet(url: URL, options: KeySetOptions): JWTVerifyGetKey {
  const now = options.now ?? Date.now;
  let local: JWTVerifyGetKey | null = null;
  let fetchedAt = 0;
  /** Fetches started so far, and the number of the one whose keys `local` holds. */
  let started = 0;
  let applied = 0;
  const missing = new Map<string, number>();
  const recent: number[] = [];
  let pending: Promise<void> | null = null;
  let queued: Promise<void> | null = null;

  const start = (): Promise<void> => {
    const t = now();
    while (recent.length > 0 && recent[0]! + options.budget.windowMs <= t) recent.shift();
    if (recent.length >= options.budget.fetches) {
      const wait = recent[0]! + options.budget.windowMs - t;
      return Promise.reject(unavailable(`the issuer's keys were fetched ${recent.length} times in ${options.budget.windowMs} ms; not again yet`, wait));
    }
    recent.push(t);
    const seq = ++started;
    const run = fetchKeySet(url, options.timeoutMs).then((set) => {
      // Fetches run one at a time; should two ever overlap, the older answer must not replace the newer.
      if (seq < applied) return;
      local = set;
      fetchedAt = now();
      applied = seq;
    });
    const tracked = run.finally(() => {
      if (pending === tracked) pending = null;
    });
    pending = tracked;
    return tracked;
  };

  /**
   * A fetch that starts now, or as soon as the one under way ends (shared by every caller that asks
   * meanwhile; a fetch someone else started after that end started after them too, and is joined).
   */
  const fetchStartingNow = (): Promise<void> => {
    if (pending === null) return start();
    return (queued ??= pending.then(settled, settled).then(() => {
      queued = null;
      return pending ?? start();
    }));
  };

  const current = async (): Promise<JWTVerifyGetKey> => {
    if (local === null) await (pending ?? start());
    else if (now() - fetchedAt >= options.maxAgeMs) await (pending ?? start()).catch(settled);
    return local!;
  };

  return async (header, token) => {
    const arrival = started;
    const first = await lookUp(await current(), header, token);
    if (first.key !== undefined) return first.key;
    const miss = JSON.stringify([header.alg, header.kid ?? null]);
    const until = missing.get(miss);
    if (first.unusable === undefined && until !== undefined && until > now()) throw new errors.JWKSNoMatchingKey();
    // Keys fetched by a fetch that started after this request arrived were already asked.
    let found = first;
    if (applied <= arrival) {
      await fetchStartingNow();
      found = await lookUp(local!, header, token);
      if (found.key !== undefined) return found.key;
    }
    if (found.unusable !== undefined) throw found.unusable;
    missing.delete(miss);
    missing.set(miss, now() + options.missingKidMs);
    if (missing.size > MISSING_ENTRIES) missing.delete(missing.keys().next().value!);
    throw new errors.JWKSNoMatchingKey();
  };
}

type Key = Awaited<ReturnType<JWTVerifyGetKey>>;

/**
 * The key the token names; none (the set has no such key); or the set's own fault, `unusable`: a
 * published key that cannot be imported, which a fetch may have since corrected.
 */
async function lookUp(
  set: JWTVerifyGetKey,
  header: Parameters<JWTVerifyGetKey>[0],
  token: Parameters<JWTVerifyGetKey>[1],
): Promise<{ key?: Key; unusable?: TasklatchError }> {
  try {
    return { key: await set(header, token) };
  } catch (error) {
    if (error instanceof errors.JWKSNoMatchingKey) return {};
    // Several keys match: the token's to answer for (no unique key), as jwtVerify reports it.
    if (error instanceof errors.JWKSMultipleMatchingKeys) throw error;
    return { unusable: unavailable(`a published key of the issuer cannot be used: ${(error as Error).message}`, RETRY_AFTER_MS, error) };
  }
}

async function fetchKeySet(url: URL, timeoutMs: number): Promise<JWTVerifyGetKey> {
  const signal = AbortSignal.timeout(timeoutMs);
  let res: Response;
  try {
    // Not following redirects, as jose does: the issuer's metadata names where its keys are.
    res = await fetch(url, { redirect: 'manual', headers: { accept: 'application/json, application/jwk-set+json' }, signal });
  } catch (error) {
    throw unavailable(`cannot fetch the issuer's keys at ${url.href}: ${reasonOf(error)}`, RETRY_AFTER_MS, error);
  }
  if (res.status !== 200) {
    await res.body?.cancel();
    throw unavailable(`the issuer's keys at ${url.href} answered HTTP ${res.status}`, RETRY_AFTER_MS);
  }
  let body: unknown;
  try {
    body = await res.json();
  } catch (error) {
    throw unavailable(`the issuer's keys at ${url.href} are not JSON: ${reasonOf(error)}`, RETRY_AFTER_MS, error);
  }
  try {
    return createLocalJWKSet(body as Parameters<typeof createLocalJWKSet>[0]);
  } catch (error) {
    throw unavailable(`the issuer's keys at ${url.href} are not a JSON Web Key Set`, RETRY_AFTER_MS, error);
  }
}

/** A failure to learn the keys: no verdict on any token, retried after `retryAfterMs`. */
function unavailable(message: string, retryAfterMs: number, cause?: unknown): TasklatchError {
  return new TasklatchError('INTERNAL', message, { data: { retryAfterMs }, ...(cause === undefined ? {} : { cause }) });
}

function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown } }).cause;
  const code = typeof cause?.code === 'string' ? ` (${cause.code})` : '';
  return `${(error as Error).message}${code}`;
}

function settled(): void {}
