"""Step 03's diagnosis beside its index part: the diagnosis runs in a background thread at a lower priority while
the index part runs in the notebook's own thread, and the notebook waits for it afterwards.

Why: at corpus scale the diagnosis is a fixed cost that does not shrink with its sample. On the 2-core machine,
at 20,000 documents, it took 6.7-9.4 s of step 03's 34-41 s (docs/measurements.md), about half of it loading the
model (importing torch ~1.0 s and transformers ~0.5 s; BERT's model code on first ``from_pretrained`` ~2.2 s, most
of it transformers importing ``torch.distributed.tensor``), the rest forward passes on the probe texts. The index
part beside it mostly waits on PostgreSQL (bulk load, HNSW builds and searches run in the server's processes), so
a core is idle for part of it, and on a host with more cores than its parallel build uses, for all of it. At the
lowest priority the diagnosis takes CPU time the index part and the database leave. The seconds the notebook still
waits are recorded (``waited_s`` in the capture).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
NICE = 10  # added to the background thread's nice value (an unprivileged process may raise it, never lower it)


class Background(Generic[T]):
    """``work`` run in a daemon thread at a lower priority; :meth:`result` waits for it (re-raising its error)."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None

        def run() -> None:
            _lower_priority()
            try:
                self._value = work()
            except BaseException as exc:  # noqa: BLE001 - raised again in the waiting thread
                self._error = exc

        self._thread = threading.Thread(target=run, name=name, daemon=True)
        self._thread.start()

    def result(self) -> tuple[T, float]:
        """The work's value and the seconds waited here for it; its error, raised here."""
        waiting = time.monotonic()
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value, time.monotonic() - waiting  # type: ignore[return-value]


def _lower_priority() -> None:
    """Run this thread only on CPU time nothing else wants (Linux ``SCHED_IDLE``, per thread; the threads it starts,
    torch's intra-op workers among them, inherit it), or at a raised nice value where that policy is missing.

    Measured at 20,000 documents on 2 cores: the step waited 0.0 s for the diagnosis at either priority, and the
    index part's HNSW build (PostgreSQL's parallel build keeps both cores busy) took 14.3-16.8 s beside it at nice
    +10 and 14.5-17.0 s as SCHED_IDLE, against 11.1-13.7 s alone: the idle policy does not make it free there."""
    tid = threading.get_native_id()
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))  # type: ignore[attr-defined]
        return
    except (AttributeError, OSError):
        pass
    try:
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, 0) + NICE)
    except (AttributeError, OSError):  # not allowed: run at the step's priority
        pass
