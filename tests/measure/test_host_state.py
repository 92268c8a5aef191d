"""The host gauge's readings: several calibration samples at each end of a phase, all of them in the phase's
readings in order, so the drift interval rests on more than two end times."""

from __future__ import annotations

from embedswap.measure import host_state
from embedswap.summary.types_latency import HostPhase


def test_a_reading_keeps_each_sample_and_their_mean(monkeypatch) -> None:
    times = iter([10.0, 12.0, 14.0])
    monkeypatch.setattr(host_state, "calibration_ms", lambda: next(times))
    reading = host_state.reading()
    assert reading["calibration_samples_ms"] == [10.0, 12.0, 14.0]
    assert reading["calibration_ms"] == 12.0


def test_a_reading_without_calibration_has_no_samples() -> None:
    reading = host_state.reading(calibrate=False)
    assert reading["calibration_ms"] is None and reading["calibration_samples_ms"] == []


def test_the_phase_lists_one_reading_per_moment_in_order() -> None:
    # a reading (the mean of its back-to-back samples) is the unit of the gauge's noise, not a sample
    before = {"calibration_ms": 11.0, "calibration_samples_ms": [10.0, 11.0, 12.0]}
    after = {"calibration_ms": 21.0, "calibration_samples_ms": [20.0, 21.0, 22.0]}
    phase = host_state.phase(before, after, [15.0, 16.0])
    assert phase["readings_ms"] == [11.0, 15.0, 16.0, 21.0]
    assert phase["calibration_ms"] == 16.0
    HostPhase.model_validate(phase)  # the summary's type accepts it


def test_a_reading_is_the_mean_of_its_samples(monkeypatch) -> None:
    times = iter([10.0, 12.0, 14.0])
    monkeypatch.setattr(host_state, "calibration_ms", lambda: next(times))
    assert host_state.calibration_reading() == 12.0


def test_one_sample_is_real_work() -> None:
    assert 0 < host_state.calibration_ms(rounds=1, size=10_000) < 1_000


def _busy(seconds: float):
    import subprocess
    import sys
    return subprocess.Popen([sys.executable, "-c", f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"])


def test_another_jobs_cpu_is_foreign_the_servers_is_not() -> None:
    """The same busy job is foreign to a meter whose server is idle and charged to the server where it is the
    server: the two meters differ by the job's own CPU in the window. The window lasts until the job has had one
    CPU-second, so a loaded host (CI beside other jobs: the job got a quarter core) gives it time rather than a
    smaller difference to read."""
    import subprocess
    import time

    job, idle = _busy(60), subprocess.Popen(["sleep", "60"])
    try:
        other = host_state.ForeignCpu(lambda: [idle.pid])  # an idle "server": the busy job is another's
        own = host_state.ForeignCpu(lambda: [job.pid])  # here the busy job is the server's
        start_cpu, start = host_state.tree_cpu_seconds([job.pid]), time.monotonic()
        other.mark(), own.mark()
        while host_state.tree_cpu_seconds([job.pid]) - start_cpu < 1.0 and time.monotonic() - start < 30:
            time.sleep(0.05)
        other.mark(), own.mark()
        job_cores = (host_state.tree_cpu_seconds([job.pid]) - start_cpu) / (time.monotonic() - start)
    finally:
        for process in (job, idle):
            process.kill()
            process.wait()
    assert job_cores > 0.05, job_cores  # the job ran: the comparison below has something to see
    assert other.cores[0] >= job_cores - 0.05  # the job is foreign to the idle server's meter
    assert abs((other.cores[0] - own.cores[0]) - job_cores) < 0.2 * job_cores + 0.03, (other.cores, own.cores,
                                                                                      job_cores)


def test_without_the_servers_processes_no_segment_is_recorded() -> None:
    meter = host_state.ForeignCpu(lambda: [])
    meter.mark(), meter.mark()
    assert meter.cores == []
