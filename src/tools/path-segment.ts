import { createHash } from 'node:crypto';

/** The longest text kept as it is. */
const KEPT_MAX = 64;
/** How much of a text that is not kept stays readable before its digest. */
const READABLE_MAX = 48;
/** Hex characters of the digest: 128 bits of SHA-256. */
const DIGEST_CHARS = 32;

// Kept as it is: lowercase ASCII letters, digits, `_`, `-` and inner dots. So never `.` or `..`,
// never a hidden name, never a trailing dot (Windows drops it), and never a `~`, which only a
// digested name holds: a kept name and a digested one cannot be equal.
const KEPT = /^[a-z0-9_-](?:[a-z0-9._-]*[a-z0-9_-])?$/;
// Device names Windows reserves in every folder, with or without an extension.
const RESERVED = /^(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\.|$)/;

/**
 * One path segment for any text (a tenant, a subject, an id), the same text always giving the same
 * segment: distinct texts give distinct segments, and the segment never leaves the folder it is
 * joined to. A text of up to 64 lowercase letters, digits, `_`, `-` and inner dots is kept as it
 * is (`acme_eu`); any other is its first 48 characters, lowercased, with every other character
 * turned to `_`, then `~` and 32 hex characters of the SHA-256 of the whole text's UTF-16 code
 * units (`acme:eu` → `acme_eu~…`, `..` → `__~…`), at most 81 characters. Only lowercase ASCII is
 * ever written, so names that differ in case or Unicode normalization stay apart on
 * case-insensitive and normalizing file systems too; distinct texts could share a segment only
 * through a collision of 128 bits of SHA-256.
 */
export function pathSegmentOf(text: string): string {
  if (text.length <= KEPT_MAX && KEPT.test(text) && !RESERVED.test(text)) return text;
  // Every code unit, an unpaired surrogate too: UTF-8 would turn two lone surrogates into one U+FFFD.
  const digest = createHash('sha256').update(text, 'utf16le').digest('hex').slice(0, DIGEST_CHARS);
  const readable = text
    .slice(0, READABLE_MAX)
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, '_')
    // Lowercasing may lengthen (`İ` is two code units lowercased).
    .slice(0, READABLE_MAX);
  return `${readable === '' ? '_' : readable}~${digest}`;
}
