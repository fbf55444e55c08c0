# SPDX-License-Identifier: Apache-2.0
"""Runs a test's worker on several threads at once and fails with what the workers raised."""
import threading


def run_threads(worker, count):
    """Calls worker(i) for i in range(count), each on its own thread, all released together;
    raises AssertionError listing (up to 5 of) the exceptions the workers raised."""
    errors = []
    start = threading.Barrier(count)

    def body(i):
        try:
            start.wait()
            worker(i)
        except Exception as e:  # noqa: BLE001 — reported below, with the thread
            errors.append(f"thread {i}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:5]
