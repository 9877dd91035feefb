"""Running a check on many threads at once: every failure is collected and reported."""
from __future__ import annotations

import threading
from collections.abc import Callable


def on_threads(check: Callable[[int], None], threads: int) -> None:
    """check(k) on `threads` threads (k = 0, 1, ...) started together; asserts none failed."""
    failures: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            check(k)
        except Exception as e:  # noqa: BLE001 - reported below
            failures.append(e)
    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    assert not failures, failures
