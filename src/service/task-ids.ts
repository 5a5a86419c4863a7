import { randomFillSync } from 'node:crypto';

/**
 * Task ids: UUIDs of version 7 (RFC 9562), the creation time's milliseconds in the first 48 bits
 * and 74 cryptographically random bits after them.
 *
 * Why time first: every index led by a task id (the tasks' primary key, the outbox's and the
 * audit trail's task index) then takes new ids at one end, as it takes a sequence, where random
 * ids went in at random leaf pages all over it. Once such an index outgrew the database's cache,
 * each random insert read a page back and, on PostgreSQL the first time after a checkpoint,
 * wrote all of it to the write-ahead log.
 *
 * Why it still cannot be guessed: the random bits are 74 (the spec asks for ids with "enough
 * entropy not to be guessed"), and nothing in one id tells anything of another's. The time in the
 * id is the task's `createdAt`, which whoever holds the id can read anyway.
 *
 * Written here, not taken from a package: the packages' version 7 keeps ids of one millisecond in
 * order with a counter in place of random bits (31 bits in `uuid`, 42 in `uuidv7`), so an id
 * gives away much of the next one; no index here needs that order within a millisecond.
 */
export function timeOrderedTaskId(now: number = Date.now()): string {
  const bytes = take16();
  bytes.writeUIntBE(Math.max(0, Math.min(now, 0xffff_ffff_ffff)), 0, 6);
  bytes[6] = 0x70 | ((bytes[6] as number) & 0x0f); // version 7
  bytes[8] = 0x80 | ((bytes[8] as number) & 0x3f); // variant 10
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

// Random bytes drawn 4 KiB at a time, as node's randomUUID does: one call into the generator per 256 ids.
const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let used = POOL_BYTES;

/** The pool's next 16 random bytes, each handed out once (the id is written over them in place). */
function take16(): Buffer {
  if (used + 16 > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  used += 16;
  return pool.subarray(used - 16, used);
}
