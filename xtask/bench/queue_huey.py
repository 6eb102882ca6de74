"""Queue peer of P4: huey with its SQLite storage (WAL, fsync on, results stored).

One producer enqueues JOBS jobs as fast as it can (one job per enqueue transaction); WORKERS
consumer threads run a task that returns its enqueue and finish times; the results are read back.
Prints {"peer", "jobs", "throughput", "p50", "p99"} as JSON (milliseconds, enqueue to finish).

usage: queue_huey.py DB_PATH JOBS WORKERS
"""

import sys
import time

from huey import SqliteHuey

from queue_figures import report

path, jobs, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
huey = SqliteHuey("bench", filename=path, fsync=True, results=True)


@huey.task()
def echo(sent):
    return {"sent": sent, "done": time.time()}


# Poll quickly: the defaults (0.1 s, growing to 10 s) would measure the poll interval.
consumer = huey.create_consumer(
    workers=workers, worker_type="thread", periodic=False, initial_delay=0.001, backoff=1.1, max_delay=0.005,
    check_worker_health=False,
)
consumer.start()
start = time.time()
handles = [echo(time.time()) for _ in range(jobs)]
finished = [handle.get(blocking=True, timeout=300) for handle in handles]
consumer.stop(graceful=True)
report("huey (SQLite)", start, finished)
