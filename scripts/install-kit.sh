#!/usr/bin/env bash
# Builds the kit's environment (notebooks, analysis, legacy server, golden reference) exactly as locked in
# requirements/kit.lock (hashes checked), then the kit itself, editable. torch is the one package outside the
# lock: `torch==2.13.0` takes the CPU build that lies on this kind of machine's disk (pip's config points at it;
# elsewhere pip takes PyPI's build with its CUDA libraries); the lock holds torch's own dependencies.
# The stamp holds the sha256 of the lock and of pyproject.toml: a changed lock (any pin) rebuilds the environment
# from scratch; a changed pyproject.toml alone (entry points, package data) re-installs the kit itself.
# To change a pin: README "Locked environments".
set -euo pipefail
source "$(dirname "$0")/venv-lib.sh"
V=${1:?usage: install-kit.sh VENV_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3.11}
stamp="$V/.installed"
lock=$(cd "$here" && sha256sum requirements/kit.lock)
project=$(cd "$here" && sha256sum pyproject.toml)
have_lock=$(sed -n 1p "$stamp" 2>/dev/null || true)
have_project=$(sed -n 2p "$stamp" 2>/dev/null || true)
if [ "$have_lock" = "$lock" ] && [ "$have_project" = "$project" ]; then
  echo "kit environment $V is up to date"; exit 0
fi
if [ "$have_lock" = "$lock" ] && [ -x "$V/bin/pip" ]; then
  echo "kit environment $V: pyproject.toml changed, re-installing the kit"
  venv_install "$V" --no-deps -e "$here"
  printf '%s\n%s\n' "$lock" "$project" > "$stamp"
  exit 0
fi
[ -e "$V" ] && echo "kit environment $V: the lock changed, rebuilding it"
new_venv "$V"
venv_install "$V" --require-hashes --no-deps -r "$here/requirements/kit.lock"
venv_install "$V" "$(torch_spec)"
venv_install "$V" --no-deps -e "$here"
"$V/bin/python" -c "import embedswap, torch, aiohttp; print('kit env ok: torch', torch.__version__)"
printf '%s\n%s\n' "$lock" "$project" > "$stamp"
