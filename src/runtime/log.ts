import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * The server's logger: JSON lines on stderr, since stdout belongs to the stdio transport.
 * `TASKLATCH_LOG_LEVEL` sets the level (default info; `silent` turns it off).
 */
export function createLogger(level = process.env.TASKLATCH_LOG_LEVEL ?? 'info'): Logger {
  return pino({ name: 'tasklatch', level }, pino.destination({ fd: 2, sync: false }));
}
