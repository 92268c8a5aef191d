#!/usr/bin/env bash
# Builds the environment of the third-party embedding server the e2e tests run as an external candidate
# (Infinity, requirements/infinity.txt; issue 16), exactly as locked in requirements/infinity.lock (hashes
# checked). torch is the one package outside the lock, as in scripts/install-kit.sh: `torch==2.13.0` takes the
# CPU build that lies on this kind of machine's disk; the lock holds torch's own dependencies.
# The stamp is the lock's sha256: a changed pin rebuilds the environment from scratch.
set -euo pipefail
source "$(dirname "$0")/venv-lib.sh"
V=${1:?usage: install-infinity.sh VENV_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3.11}
stamp="$V/.installed"
want=$(cd "$here" && sha256sum requirements/infinity.lock)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "infinity environment $V is up to date"; exit 0
fi
[ -e "$V" ] && echo "infinity environment $V: the lock changed, rebuilding it"
new_venv "$V"
venv_install "$V" --require-hashes --no-deps -r "$here/requirements/infinity.lock"
venv_install "$V" "$(torch_spec)"
"$V/bin/python" -c "import infinity_emb, torch; print('infinity env ok:', infinity_emb.__version__, 'torch', torch.__version__)"
printf '%s\n' "$want" > "$stamp"
