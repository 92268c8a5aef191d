#!/usr/bin/env bash
# Builds the kit's environment (notebooks, analysis, legacy server, golden reference) exactly as locked in
# requirements/kit.lock (hashes checked), then the kit itself, editable. torch is the one package outside the
# lock: `torch==2.13.0` takes the CPU build that lies on this kind of machine's disk (pip's config points at it;
# elsewhere pip takes PyPI's build with its CUDA libraries); the lock holds torch's own dependencies.
# The stamp is the sha256 of the lock and pyproject.toml: any pin change rebuilds the environment from scratch.
# To change a pin: README "Locked environments".
set -euo pipefail
V=${1:?usage: install-kit.sh VENV_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3.11}
stamp="$V/.installed"
want=$(cd "$here" && sha256sum requirements/kit.lock pyproject.toml)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "kit environment $V is up to date"; exit 0
fi
[ -e "$V" ] && echo "kit environment $V: the lock or pyproject.toml changed, rebuilding it"
rm -rf "$V"
"$PY" -m venv "$V"
"$V/bin/pip" install -q --upgrade pip
"$V/bin/pip" install -q --require-hashes --no-deps -r "$here/requirements/kit.lock"
"$V/bin/pip" install -q "torch==2.13.0"
"$V/bin/pip" install -q --no-deps -e "$here"
"$V/bin/python" -c "import embedswap, torch, aiohttp; print('kit env ok: torch', torch.__version__)"
printf '%s\n' "$want" > "$stamp"
