import { openSync, writeSync } from 'node:fs';
import { ServerResponse } from 'node:http';
import { join } from 'node:path';
import pg from 'pg';
import { CHANGES_CHANNEL } from '../../src/store/postgres/listener.js';

/**
 * Loaded into a `tasklatch serve` process with `--import` (by `bench/wake-trace.ts`) when
 * TASKLATCH_WAKE_MARKS names a directory: the process writes there, one line per event, when it
 * hears a change notification (`heard <payload>`) and when it writes an HTTP response's body
 * (`wrote <first bytes>`), each with the time on the clock every process shares (milliseconds
 * since the epoch, fractional). The wake-trace joins them on the task id.
 */
const dir = process.env.TASKLATCH_WAKE_MARKS;
if (dir !== undefined && dir !== '') {
  const file = openSync(join(dir, `marks-${process.pid}.log`), 'w');
  const now = () => (performance.timeOrigin + performance.now()).toFixed(3);
  const mark = (line: string) => writeSync(file, `${now()} ${line.replace(/\s+/g, ' ')}\n`);

  const client = pg.Client.prototype as unknown as { emit: (this: pg.Client, event: string, ...args: unknown[]) => boolean };
  const emit = client.emit;
  client.emit = function (this: pg.Client, event: string, ...args: unknown[]) {
    const message = args[0] as { channel?: string; payload?: string } | undefined;
    if (event === 'notification' && message?.channel === CHANGES_CHANNEL) mark(`heard ${message.payload ?? ''}`);
    return emit.call(this, event, ...args);
  };

  const response = ServerResponse.prototype as unknown as { write: (this: ServerResponse, chunk: unknown, ...rest: unknown[]) => boolean };
  const write = response.write;
  response.write = function (this: ServerResponse, chunk: unknown, ...rest: unknown[]) {
    const text =
      typeof chunk === 'string'
        ? chunk
        : chunk instanceof Uint8Array
          ? Buffer.from(chunk.buffer, chunk.byteOffset, Math.min(chunk.byteLength, 2000)).toString('utf8')
          : '';
    if (text !== '') mark(`wrote ${text.slice(0, 2000)}`);
    return write.call(this, chunk, ...rest);
  };
}
