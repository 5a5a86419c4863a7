import { isStorableText } from '../core/text.js';
import type { ProgressEvent } from './types.js';

/** A progress message longer than this is clipped (UTF-16 units) before it leaves the process. */
export const PROGRESS_MESSAGE_CHARS = 1000;

/**
 * The most bytes one encoded progress event may take. PostgreSQL refuses a NOTIFY payload of
 * 8000 bytes or more, and the payload also carries the schema name (at most 63 bytes) in front:
 * an event over this bound loses its message, and one still over it (an absurd task id) is dropped.
 */
export const PROGRESS_PAYLOAD_BYTES = 7000;

/**
 * The event as it may travel: progress and total finite numbers (a NaN would arrive as null),
 * the message clipped without splitting a surrogate pair. Null when the progress is no number,
 * or when a text of it is not storable text (a NUL, a lone surrogate): refused alone, before it
 * joins the events of other tasks in one statement.
 */
export function clipProgress(event: ProgressEvent): ProgressEvent | null {
  if (typeof event.progress !== 'number' || !Number.isFinite(event.progress)) return null;
  if (!isStorableText(String(event.taskId)) || !isStorableText(String(event.origin))) return null;
  if (typeof event.message === 'string' && !isStorableText(event.message)) return null;
  const clipped: ProgressEvent = { taskId: event.taskId, progress: event.progress, origin: event.origin };
  if (typeof event.version === 'number' && Number.isSafeInteger(event.version)) clipped.version = event.version;
  if (typeof event.total === 'number' && Number.isFinite(event.total)) clipped.total = event.total;
  if (typeof event.message === 'string') clipped.message = clipText(event.message, PROGRESS_MESSAGE_CHARS);
  return clipped;
}

/** The event as one line of JSON within `PROGRESS_PAYLOAD_BYTES`, or null when even without its message it is over. */
export function encodeProgress(event: ProgressEvent): string | null {
  const text = JSON.stringify(event);
  if (Buffer.byteLength(text, 'utf8') <= PROGRESS_PAYLOAD_BYTES) return text;
  // JSON escapes can make a clipped message six times its length (control characters).
  const { message: _dropped, ...bare } = event;
  const shorter = JSON.stringify(bare);
  return Buffer.byteLength(shorter, 'utf8') <= PROGRESS_PAYLOAD_BYTES ? shorter : null;
}

/**
 * An event another process encoded, checked field by field: anything malformed (another
 * writer on the channel, a truncated row) is null and dropped, never passed on half-read.
 */
export function decodeProgress(text: string): ProgressEvent | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const { taskId, version, progress, total, message, origin } = value as Record<string, unknown>;
  if (typeof taskId !== 'string' || typeof origin !== 'string' || typeof progress !== 'number') return null;
  if (version !== undefined && typeof version !== 'number') return null;
  if (total !== undefined && typeof total !== 'number') return null;
  if (message !== undefined && typeof message !== 'string') return null;
  return clipProgress({
    taskId,
    progress,
    origin,
    ...(version === undefined ? {} : { version }),
    ...(total === undefined ? {} : { total }),
    ...(message === undefined ? {} : { message }),
  });
}

function clipText(text: string, most: number): string {
  if (text.length <= most) return text;
  // A high surrogate left at the end would be half a character: not text in any encoding.
  const code = text.charCodeAt(most - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? most - 1 : most);
}
