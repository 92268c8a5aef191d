"""The command line's exit codes, its usage error and its one-line error text: shared by ``embedswap.cli`` and
``embedswap.guard.cli`` so that neither imports the other (the guard's commands are registered by the main CLI)."""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
# `guard check`: the server did not answer, or answered "try later": neither a drift (1) nor a usage error (2)
EXIT_COULD_NOT_TELL = 3


class UsageError(ValueError):
    """A wrong argument: exit code 2."""


class StepError(RuntimeError):
    """A step could not run (e.g. the captures it reads are missing). The message says which step to run first.
    Here rather than in ``embedswap.steps``, so that the command line names it without importing the pipeline."""


def one_line(exc: BaseException) -> str:
    """An error as one line of at most ~600 characters (a traceback is for ``--debug``)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 600 else text[:600] + " ..."
