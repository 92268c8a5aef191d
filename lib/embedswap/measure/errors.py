"""The one failure a measurement step raises (kept apart so the latency and shim modules share it)."""

class StepFailed(RuntimeError):
    """A measurement step could not complete; what was captured so far is kept and the step is marked."""
