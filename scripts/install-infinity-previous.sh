#!/usr/bin/env bash
# Builds the environment of the previous Infinity release (requirements/infinity-previous.lock, hashes checked), the
# legacy side of the engine-upgrade pair (tests/e2e/test_upgrade_pair_e2e.py, issue 54; docs/upgrade-pair.md).
# It is a small venv layered over the Infinity environment (.venvs/infinity, `make infinity`): its own site-packages
# holds infinity-emb 0.0.77 only (no dependencies), and a .pth file appends the Infinity environment's site-packages,
# so every dependency is the one requirements/infinity.lock pins; `pip check` proves 0.0.77 accepts them all.
# A few seconds (one 97 kB wheel) instead of a second copy of torch.
# The stamp is both locks' sha256: a changed pin on either side rebuilds it.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
V=${1:?usage: install-infinity-previous.sh VENV_DIR [INFINITY_VENV]}
BASE=${2:-$here/.venvs/infinity}
PY=${PYTHON:-python3.11}
stamp="$V/.installed"
want=$(cd "$here" && sha256sum requirements/infinity-previous.lock requirements/infinity.lock)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "previous-infinity environment $V is up to date"; exit 0
fi
[ -e "$V" ] && echo "previous-infinity environment $V: a lock changed, rebuilding it"
rm -rf "$V"
"$PY" -m venv --without-pip "$V"
test -x "$BASE/bin/python" || { echo "install-infinity-previous.sh: $BASE is missing: run \`make infinity\` first" >&2; exit 1; }
site=$("$V/bin/python" -c "import sysconfig; print(sysconfig.get_path('purelib'))")
base_site=$("$BASE/bin/python" -c "import sysconfig; print(sysconfig.get_path('purelib'))")
"$BASE/bin/python" -m pip install -q --require-hashes --no-deps --target "$site" \
  -r "$here/requirements/infinity-previous.lock"
printf '%s\n' "$(cd "$base_site" && pwd)" > "$site/_infinity_base.pth"
"$V/bin/python" -m pip check
"$V/bin/python" -c "import infinity_emb; print('previous infinity env ok:', infinity_emb.__version__, infinity_emb.__file__)"
printf '%s\n' "$want" > "$stamp"
