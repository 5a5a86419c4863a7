/** A UTF-16 surrogate without its pair: not text in any encoding a database stores. */
export const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether a string can be stored as it is by every store: no NUL (PostgreSQL text refuses it)
 * and no lone surrogate (not valid UTF-8). Input that fails is refused at the wire, before the
 * store sees it.
 */
export function isStorableText(text: string): boolean {
  // One character-class test first: most text holds neither a NUL nor any surrogate, and only a
  // string that does needs the look-around test.
  return !SUSPECT.test(text) || (!text.includes('\u0000') && !LONE_SURROGATE.test(text));
}

/** A NUL or any surrogate, paired or not. */
const SUSPECT = /[\u0000\uD800-\uDFFF]/;
