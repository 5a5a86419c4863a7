import type { IncomingMessage } from 'node:http';

/** A request body as read: JSON, none, too large (reading stopped), not JSON, or the client left mid-upload. */
export type ReadBody = { kind: 'json'; value: unknown } | { kind: 'none' } | { kind: 'too large' } | { kind: 'not json'; message: string } | { kind: 'gone' };

/**
 * How much of an over-limit body is still read, and thrown away, before the 413: a client such
 * as `fetch` that writes its whole body before it reads the answer would otherwise meet a closed
 * connection (EPIPE) instead of the 413. Larger uploads are cut off at once.
 */
export const DRAIN_BYTES = 8 * 1024 * 1024;

/**
 * Reads a JSON body of at most `limit` bytes. Past the limit nothing more is kept: up to
 * `DRAIN_BYTES` more are read and discarded so that the client, done writing, hears the 413;
 * beyond that the request is paused, not drained (the caller answers 413 and closes the
 * connection), so a huge upload costs no memory and a bounded read. A client that aborts its
 * upload is `gone`: its own doing, nothing to answer and no stack to log.
 */
export function readBody(req: IncomingMessage, limit: number): Promise<ReadBody> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit + DRAIN_BYTES) {
    req.pause();
    return Promise.resolve({ kind: 'too large' });
  }
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (result: ReadBody) => {
      req.off('data', onData).off('end', onEnd).off('error', onGone).off('aborted', onGone).off('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) return void chunks.push(chunk);
      chunks.length = 0;
      if (size <= limit + DRAIN_BYTES) return;
      req.pause();
      finish({ kind: 'too large' });
    };
    const onEnd = () => {
      if (size > limit) return finish({ kind: 'too large' });
      try {
        finish({ kind: 'json', value: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown });
      } catch (error) {
        finish({ kind: 'not json', message: (error as Error).message.slice(0, 200) });
      }
    };
    const onGone = () => finish({ kind: 'gone' });
    const onClose = () => {
      if (!req.complete) onGone();
    };
    // `on`, not `once`: `finish` takes every listener off, and a once-wrapper is one more
    // function per listener per request.
    req.on('data', onData).on('end', onEnd).on('error', onGone).on('aborted', onGone).on('close', onClose);
  });
}
