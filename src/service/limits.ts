/** The maxima a task service enforces; every one is documented in the README. */
export interface TaskLimits {
  /** ttl given to a task whose request names none (ms); null = never expires. */
  defaultTtl: number | null;
  /** Largest ttl granted (ms); a larger request is clamped to it. */
  maxTtl: number;
  /** Smallest ttl granted (ms); a smaller request (0 would be dead on arrival) is raised to it. */
  minTtl: number;
  /** pollInterval suggested to requestors (ms). */
  pollInterval: number;
  /** Tasks per `tasks/list` page. */
  pageSize: number;
  /** Non-terminal tasks one auth key may hold at once; null = no limit. */
  maxActiveTasks: number | null;
}

export const DEFAULT_LIMITS: TaskLimits = {
  defaultTtl: 60 * 60 * 1000,
  maxTtl: 7 * 24 * 60 * 60 * 1000,
  minTtl: 1000,
  pollInterval: 1000,
  pageSize: 50,
  maxActiveTasks: 100,
};

/** The ttl actually granted for a requested one (ms, or null/undefined for none). */
export function grantTtl(requested: unknown, limits: TaskLimits): number | null {
  if (typeof requested !== 'number' || !Number.isFinite(requested) || requested < 0) {
    return limits.defaultTtl === null ? null : Math.min(limits.defaultTtl, limits.maxTtl);
  }
  return Math.min(Math.max(Math.floor(requested), limits.minTtl), limits.maxTtl);
}
