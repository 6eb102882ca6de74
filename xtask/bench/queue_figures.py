"""What the queue peers of P4 report, the same way for each: one JSON line with the throughput
(jobs per second from the first enqueue to the last finish) and the p50 and p99 of enqueue to
finish, in milliseconds."""

import json


def report(peer, start, finished):
    """Prints the figures of `finished`, each `{"sent": t0, "done": t1}` (seconds)."""
    latencies = sorted((f["done"] - f["sent"]) * 1000 for f in finished)
    elapsed = max(f["done"] for f in finished) - start

    def percentile(p):
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))]

    print(json.dumps({"peer": peer, "jobs": len(finished), "throughput": len(finished) / elapsed,
                      "p50": percentile(0.50), "p99": percentile(0.99)}))
