"""How the kit names a server's unusable answers: 90 latency requests through the corrupting proxy of the tests.

Run:  HF_HUB_OFFLINE=1 .venvs/kit/bin/python benchmarks/corrupting_proxy_kinds.py   (about 20 s; exit 0 always)

A fake server (tests/support/fakeservers.py) answers batches of 8 documents; the proxy in front of it
(tests/support/corrupting_proxy.py) spoils answers on the schedule of issue 46: one vector 383 values long every
10th answer, ``data[].index`` twice every 15th, a bare ``NaN`` every 25th, the body cut in half every 40th, a 2 s
pause every 50th. ``embedswap.measure.load.closed_loop`` sends 90 requests one at a time; each record is classified as
the summary classifies latency requests (``status_class``) and counted as the summary's ``faults`` section counts
them (``answer_faults.count_kinds``). An answer spoiled twice counts once, under the first fault the client sees
(a cut hides the rest; lengths before NaN before index), so the kit counts fewer than were injected, never more.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

from corrupting_proxy import RULES, Schedule, corrupting_proxy  # noqa: E402
from fakeservers import Behaviour, serve  # noqa: E402

from embedswap.wire.answer_faults import count_kinds  # noqa: E402
from embedswap.measure.load import LoadSpec, closed_loop, run_sync, status_class  # noqa: E402

REQUESTS = 90


def main() -> None:
    schedule = Schedule()
    with serve(Behaviour()) as port, corrupting_proxy(f"http://127.0.0.1:{port}", schedule) as url:
        spec = LoadSpec(base_url=url, model="m", batches=[[f"doc {i}" for i in range(8)]], timeout_s=10)
        records, wall = run_sync(closed_loop(spec, "sequential", 0, REQUESTS, 1))
    answers, kinds = count_kinds([{"status": r.status, "error": r.error} for r in records])
    print(f"requests: {answers}, unusable: {sum(kinds.values())} ({sum(kinds.values()) / answers:.1%}), wall {wall:.1f} s")
    print("by kind (summary.faults):", kinds)
    print("latency error_classes:", dict(Counter(status_class(r.status, r.error) for r in records)))
    print("injected by rule:", {rule: schedule.count(rule) for rule in RULES})


if __name__ == "__main__":
    main()
