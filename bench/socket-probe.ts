import pg from 'pg';
import { DEFAULT_BENCH_PG_URL } from './lib/postgres.js';

/**
 * `node dist/bench/bench/socket-probe.js [socket directory] [statements]`: node-postgres's
 * `SELECT 1` round trip over TCP (the bench's URL) and through the server's Unix socket, one
 * connection and sixteen at once, each side twice, alternating: the round trip, the rate and
 * Node's CPU per statement. What README's Store URLs says of a server on the same machine.
 */
async function side(url: string, connections: number, statements: number): Promise<string> {
  const clients = await Promise.all(
    Array.from({ length: connections }, async () => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      for (let i = 0; i < 200; i++) await client.query('SELECT 1');
      return client;
    }),
  );
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    clients.map(async (client) => {
      for (let i = 0; i < statements / connections; i++) await client.query('SELECT 1');
    }),
  );
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await Promise.all(clients.map((client) => client.end()));
  const perStatement = (ms * 1000) / (statements / connections);
  return `round trip ${perStatement.toFixed(1)} µs, ${((statements / ms) * 1000).toFixed(0)}/s, Node CPU ${((cpu.user + cpu.system) / statements).toFixed(1)} µs per statement`;
}

async function main(): Promise<void> {
  const directory = process.argv[2] ?? '/var/run/postgresql';
  const statements = Number(process.argv[3] ?? 20_000);
  const tcp = process.env.TASKLATCH_BENCH_PG_URL ?? DEFAULT_BENCH_PG_URL;
  const socket = new URL(tcp);
  socket.hostname = '';
  socket.port = '';
  socket.searchParams.set('host', directory);
  for (let round = 0; round < 2; round++)
    for (const connections of [1, 16])
      for (const [name, url] of [
        ['TCP', tcp],
        ['Unix socket', socket.toString()],
      ] as const)
        console.log(`${name.padEnd(11)} @${String(connections).padEnd(2)} ${await side(url, connections, statements)}`);
}

await main();
