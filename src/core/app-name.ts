import { TasklatchError } from './errors.js';

/** The app of a runtime that names none (the library's default, and of tasks stored before apps were). */
export const DEFAULT_APP = 'default';

/** Longest app name: it is stored with every task and printed in every listing. */
export const APP_NAME_MAX = 100;

// Control, format, separator (line/paragraph) and unassigned code points, and lone surrogates:
// none prints, and a name that holds one could not be told apart from another in a listing.
const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cn}\p{Cs}]/u;

/**
 * An application's name, checked: 1 to `APP_NAME_MAX` characters, printable, no leading or
 * trailing space. Tasks carry it and workers claim by it, so a name that two spellings could
 * mean (`build ` and `build`) is refused rather than kept.
 */
export function checkAppName(value: unknown, source = 'app name'): string {
  if (typeof value !== 'string') throw new TasklatchError('INVALID_INPUT', `${source} must be a string`);
  if (value.length === 0) throw new TasklatchError('INVALID_INPUT', `${source} must not be empty`);
  if ([...value].length > APP_NAME_MAX) throw new TasklatchError('INVALID_INPUT', `${source} must be at most ${APP_NAME_MAX} characters`);
  if (UNPRINTABLE.test(value)) throw new TasklatchError('INVALID_INPUT', `${source} ${JSON.stringify(value)} holds a character that does not print`);
  if (value.trim() !== value) throw new TasklatchError('INVALID_INPUT', `${source} ${JSON.stringify(value)} must not start or end with a space`);
  return value;
}
