"""Queue peer of P5: PgQueuer on PostgreSQL (FOR UPDATE SKIP LOCKED, LISTEN/NOTIFY), each job's
result stored in a table of its own.

PRODUCERS tasks enqueue JOBS jobs between them as fast as they can (one job per enqueue
transaction, as one invoke queues one call); a worker process of its own runs them, WORKERS at
once, each job writing its enqueue and finish times as a row of `bench_results`; when every row
is there they are read back. Prints {"peer", "jobs", "throughput", "p50", "p99"} as JSON
(milliseconds, enqueue to finish).

usage: queue_pgqueuer.py URL JOBS WORKERS
"""

import asyncio
import datetime
import multiprocessing
import sys
import time

import asyncpg
from pgqueuer import AsyncpgDriver, PgQueuer, Queries

from queue_figures import report

PRODUCERS = 16
RESULTS = "CREATE TABLE IF NOT EXISTS bench_results (id bigint PRIMARY KEY, sent float8, done float8)"


async def work(url, workers):
    pool = await asyncpg.create_pool(url, min_size=2, max_size=workers + 4)
    pgq = PgQueuer.from_asyncpg_pool(pool)

    @pgq.entrypoint("echo")
    async def echo(job):
        n, sent = job.payload.decode().split(" ")
        await pool.execute("INSERT INTO bench_results (id, sent, done) VALUES ($1, $2, $3)",
                           int(n), float(sent), time.time())

    await pgq.run(batch_size=workers, dequeue_timeout=datetime.timedelta(seconds=1))


def worker(url, workers):
    asyncio.run(work(url, workers))


async def produce(url, jobs):
    setup = await asyncpg.connect(url)
    await Queries(AsyncpgDriver(setup)).install()
    await setup.execute(RESULTS)
    await setup.execute("TRUNCATE bench_results")
    process = multiprocessing.Process(target=worker, args=(url, workers), daemon=True)
    process.start()
    await asyncio.sleep(2)  # the worker connects and listens
    pool = await asyncpg.create_pool(url, min_size=PRODUCERS, max_size=PRODUCERS)
    start = time.time()

    async def producer(first):
        async with pool.acquire() as connection:
            queries = Queries(AsyncpgDriver(connection))
            for n in range(first, jobs, PRODUCERS):
                await queries.enqueue("echo", f"{n} {time.time()}".encode())

    await asyncio.gather(*(producer(first) for first in range(PRODUCERS)))
    while await setup.fetchval("SELECT count(*) FROM bench_results") < jobs:
        await asyncio.sleep(0.05)
    rows = await setup.fetch("SELECT sent, done FROM bench_results")
    process.terminate()
    report("PgQueuer (PostgreSQL)", start, [{"sent": r["sent"], "done": r["done"]} for r in rows])


url, jobs, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if __name__ == "__main__":
    asyncio.run(produce(url, jobs))
