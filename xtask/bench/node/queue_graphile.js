// Queue peer of P5: graphile-worker on PostgreSQL (FOR UPDATE SKIP LOCKED, LISTEN/NOTIFY), each
// job's result stored in a table of its own.
//
// PRODUCERS producers enqueue JOBS jobs between them as fast as they can (one job per `addJob`
// transaction, as one invoke queues one call); a worker process of its own runs them, WORKERS at
// once, each job writing its enqueue and finish times as a row of `bench_results`; when every row
// is there they are read back. Prints {"peer", "jobs", "throughput", "p50", "p99"} as JSON
// (milliseconds, enqueue to finish), as the other queue peers do.
//
// usage: node queue_graphile.js URL JOBS WORKERS

"use strict";

const { fork } = require("node:child_process");
const { Pool } = require("pg");
const { Logger, run, makeWorkerUtils } = require("graphile-worker");

// Errors only: a line per job would cost the worker more than the job.
const logger = new Logger(() => (level, message) => {
  if (level === "error") console.error(message);
});

const PRODUCERS = 16;
const [url, jobs, workers] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const now = () => Date.now() / 1000;

async function work() {
  const pool = new Pool({ connectionString: url, max: workers + 4 });
  pool.on("error", (error) => console.error(error));
  await run({
    pgPool: pool,
    concurrency: workers,
    noHandleSignals: false,
    logger,
    pollInterval: 1000,
    taskList: {
      echo: async (payload) => {
        await pool.query("INSERT INTO bench_results (id, sent, done) VALUES ($1, $2, $3)", [
          payload.n,
          payload.sent,
          now(),
        ]);
      },
    },
  });
  process.send("ready");
}

async function produce() {
  const pool = new Pool({ connectionString: url, max: PRODUCERS + 2 });
  pool.on("error", (error) => console.error(error));
  await pool.query("CREATE TABLE IF NOT EXISTS bench_results (id bigint PRIMARY KEY, sent float8, done float8)");
  await pool.query("TRUNCATE bench_results");
  const utils = await makeWorkerUtils({ pgPool: pool, logger });
  await utils.migrate();
  const child = fork(__filename, [url, String(jobs), String(workers), "work"], { stdio: "inherit" });
  await new Promise((resolve) => child.once("message", resolve));
  const start = now();
  const producers = [];
  for (let first = 0; first < PRODUCERS; first += 1) {
    producers.push(
      (async () => {
        for (let n = first; n < jobs; n += PRODUCERS) {
          await utils.addJob("echo", { n, sent: now() });
        }
      })(),
    );
  }
  await Promise.all(producers);
  for (;;) {
    const { rows } = await pool.query("SELECT count(*)::int AS done FROM bench_results");
    if (rows[0].done >= jobs) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const { rows } = await pool.query("SELECT sent, done FROM bench_results");
  child.kill("SIGTERM");
  const latencies = rows.map((r) => (r.done - r.sent) * 1000).sort((a, b) => a - b);
  const elapsed = Math.max(...rows.map((r) => r.done)) - start;
  const percentile = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))];
  console.log(
    JSON.stringify({
      peer: "graphile-worker (PostgreSQL)",
      jobs: rows.length,
      throughput: rows.length / elapsed,
      p50: percentile(0.5),
      p99: percentile(0.99),
    }),
  );
  await utils.release();
  await pool.end();
}

(process.argv[5] === "work" ? work() : produce()).catch((error) => {
  console.error(error);
  process.exit(1);
});
