#!/usr/bin/env bash
# Builds AIPerf's own environment for the open-loop cross-check (benchmarks/aiperf_open_loop.py) and the closed-loop
# one (benchmarks/aiperf_crosscheck.py). AIPerf 0.13.0 pins pandas~=2.3.3, huggingface-hub<2, pyzmq~=26.4, ...,
# all older than the kit's, so it lives apart from the kit (not part of `make test`).
# The stamp is the pin: a changed version rebuilds the environment from scratch.
set -euo pipefail
V=${1:-.venvs/aiperf}
PY=${PYTHON:-python3.11}
SPEC="aiperf==0.13.0"
stamp="$V/.installed"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$SPEC" ] && [ -x "$V/bin/aiperf" ]; then
  echo "aiperf environment $V is up to date"; exit 0
fi
[ -e "$V" ] && echo "aiperf environment $V: rebuilding it"
rm -rf "$V"
"$PY" -m venv "$V"
"$V/bin/pip" install -q --upgrade pip
"$V/bin/pip" install -q "$SPEC"
"$V/bin/pip" check
"$V/bin/aiperf" --version 2>/dev/null || "$V/bin/python" -c "import aiperf; print('aiperf env ok')"
printf '%s\n' "$SPEC" > "$stamp"
