import fc from 'fast-check';

/**
 * Pieces of text a hostile caller would try in a name: separators, dots, case and normalization
 * variants, paired and lone surrogates, controls, look-alikes and spaces.
 */
export const HOSTILE_PIECES = [
  '/',
  ':',
  '_',
  '.',
  '..',
  '%2F',
  '~',
  '\\',
  'a',
  'A',
  'acme',
  'ACME',
  '\u00e9', // é precomposed (NFC)
  'e\u0301', // é decomposed (NFD)
  '\u212a', // Kelvin sign, K when case-folded
  '\u0130', // İ, two code units lowercased
  '\u00df', // ß, SS uppercased
  '\ud83d\ude00', // 😀, a surrogate pair
  '\ud800', // a lone high surrogate
  '\udc00', // a lone low surrogate
  '\ufffd', // what a lone surrogate becomes on its way to a database
  '\u0000',
  '\u0007',
  '\u001f',
  '\u007f',
  '\u0085',
  '\u009f',
  '\u200b', // zero-width space
  ' ',
  '\u00a0',
  'con',
  'x'.repeat(120),
] as const;

/** Any string a hostile caller might send as a tenant or subject (well-formed or not, short or very long). */
export const hostileText: fc.Arbitrary<string> = fc.oneof(
  fc.array(fc.constantFrom(...HOSTILE_PIECES), { maxLength: 6 }).map((pieces) => pieces.join('')),
  fc.string({ unit: 'binary', maxLength: 12 }),
  fc.string({ unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), maxLength: 8 }),
  fc.tuple(fc.string({ maxLength: 4 }), fc.integer({ min: 250, max: 1100 })).map(([tail, n]) => 'p'.repeat(n) + tail),
);
