"""Queue peer of P4: DBOS with its SQLite system database (durable workflows, results stored).

One producer enqueues JOBS workflows on a queue as fast as it can; the queue runs them with
WORKERS at once; the results are read back. Prints {"peer", "jobs", "throughput", "p50", "p99"}
as JSON (milliseconds, enqueue to finish).

usage: queue_dbos.py DB_PATH JOBS WORKERS
"""

import logging
import sys
import time

from dbos import DBOS

from queue_figures import report

path, jobs, workers = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
logging.getLogger("dbos").setLevel(logging.WARNING)
DBOS(config={"name": "bench", "system_database_url": f"sqlite:///{path}", "log_level": "WARNING"})


@DBOS.workflow()
def echo(sent):
    return {"sent": sent, "done": time.time()}


DBOS.launch()
# Poll quickly: the default (1 s) would measure the poll interval.
queue = DBOS.register_queue("bench", worker_concurrency=workers, polling_interval_sec=0.01)
start = time.time()
handles = [queue.enqueue(echo, time.time()) for _ in range(jobs)]
finished = [handle.get_result() for handle in handles]
DBOS.destroy()
report("DBOS (SQLite)", start, finished)
