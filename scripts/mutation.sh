#!/usr/bin/env bash
# Mutation testing of the deciding modules (issue 23): `make mutation`; the work is scripts/mutation.py's (its
# docstring says what runs and how). SESSIONS="vectors redact" to run some; RECHECK=1 reruns the last survivors.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
exec "${PY:-$REPO/.venvs/kit/bin/python}" "$REPO/scripts/mutation.py" "$@"
