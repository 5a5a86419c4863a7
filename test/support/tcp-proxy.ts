import { EventEmitter, once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy in front of a server (PostgreSQL here), which a test cuts and restores: an outage
 * of the network between a process and its database, without stopping the database. While cut,
 * every open connection is reset and every new one is closed as soon as it arrives, so that
 * clients see what they see when a database host drops off the network: "Connection terminated
 * unexpectedly", ECONNRESET. Events, not timers, tell a test what happened: `connection` (a
 * client connected while the proxy was up) and `refused` (one arrived while it was cut).
 */
export class TcpProxy extends EventEmitter {
  private readonly open = new Set<Socket>();
  private cutNow = false;
  private accepted = 0;
  private cutAt: number | null = null;

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {
    super();
  }

  /** Listens on a free port of 127.0.0.1, forwarding to `target` (host:port). */
  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    let proxy: TcpProxy | null = null;
    const server = createServer((client) => proxy?.accept(client, target));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    proxy = new TcpProxy(server, typeof address === 'object' && address !== null ? address.port : 0);
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  route(url: string): string {
    const routed = new URL(url);
    routed.hostname = '127.0.0.1';
    routed.port = String(this.port);
    return routed.toString();
  }

  /** Whether the proxy is cut now. */
  get isCut(): boolean {
    return this.cutNow;
  }

  /** Open connections through the proxy. */
  get connections(): number {
    return this.open.size / 2;
  }

  /** Resets every open connection, and every new one until `restore`. */
  cut(): void {
    this.cutNow = true;
    for (const socket of this.open) socket.resetAndDestroy();
    this.open.clear();
  }

  /** Cuts (as `cut`) once the `n`-th connection from now is through: a drop at a chosen step of a client's start. */
  cutAfter(n: number): void {
    this.cutAt = this.accepted + n;
  }

  /** Lets connections through again. */
  restore(): void {
    this.cutNow = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    client.on('error', () => undefined);
    if (this.cutNow) {
      client.resetAndDestroy();
      this.emit('refused');
      return;
    }
    const upstream = connect(target.port, target.host);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      this.open.add(a);
      a.on('close', () => {
        this.open.delete(a);
        b.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
    this.accepted += 1;
    this.emit('connection');
    if (this.cutAt !== null && this.accepted >= this.cutAt) {
      this.cutAt = null;
      // Once the client's first bytes are through: the drop comes mid-conversation.
      upstream.once('data', () => this.cut());
    }
  }
}

/** Host and port of a `postgres://` URL. */
export function targetOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname === '' ? '127.0.0.1' : parsed.hostname, port: parsed.port === '' ? 5432 : Number(parsed.port) };
}
