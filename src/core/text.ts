/** A UTF-16 surrogate without its pair: not text in any encoding a database stores. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether a string can be stored as it is by every store: no NUL (PostgreSQL text refuses it)
 * and no lone surrogate (not valid UTF-8). Input that fails is refused at the wire, before the
 * store sees it.
 */
export function isStorableText(text: string): boolean {
  return !text.includes('\u0000') && !LONE_SURROGATE.test(text);
}
