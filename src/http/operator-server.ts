import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ExtraRoute } from './operator-routes.js';

export interface RunningOperatorServer {
  /** e.g. http://127.0.0.1:9464 */
  url: string;
  close(): Promise<void>;
}

/** A small HTTP server of the operator's routes alone (`tasklatch worker --metrics HOST:PORT`). */
export async function startOperatorServer(route: ExtraRoute, host: string, port: number, onError: (error: unknown) => void): Promise<RunningOperatorServer> {
  const server = createServer((req, res) => {
    const pathname = new URL(req.url ?? '/', 'http://localhost').pathname;
    route(req, res, pathname).then(
      (handled) => {
        if (!handled)
          res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'not found: /metrics, /healthz, /readyz, /console' }));
      },
      (error: unknown) => {
        onError(error);
        if (!res.headersSent) res.writeHead(500).end();
        else res.end();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
