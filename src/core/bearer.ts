import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Whether an `Authorization` header bears `token` (`Bearer …`), compared in constant time
 * (digests of equal length): the operator listener's token, for `/metrics`, `/events` and the
 * console alike.
 */
export function headerBearsToken(authorization: string | undefined, token: string): boolean {
  const match = authorization === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (match === null) return false;
  return sameText(match[1]!, token);
}

/** Whether two texts are equal, compared in constant time (digests of equal length). */
export function sameText(a: string, b: string): boolean {
  const digest = (text: string) => createHash('sha256').update(text).digest();
  return timingSafeEqual(digest(a), digest(b));
}
