#!/usr/bin/env bash
# Builds the environment of llama.cpp's OpenAI-compatible server (llama-cpp-python[server], requirements/llamacpp.txt),
# which the e2e tests run as an external candidate, exactly as locked in requirements/llamacpp.lock (hashes checked).
# llama-cpp-python ships as a source distribution only: pip compiles llama.cpp (about 10 minutes wall, 9 CPU-minutes,
# on two shared cores; the built wheel is kept in a cache of its own, below: a rebuild on the same machine is quick).
# The build targets AVX2 (-DGGML_NATIVE=OFF with AVX/AVX2/FMA/F16C/BMI2), not the build machine's CPU: a native
# build on a CPU with AMX and AVX-512 (this project's machines, 2026-12-05) crashes with SIGSEGV in the q8_0 GGUF's
# first decode (llama_cpp/_internals.py decode; the f32 GGUF works), which failed the q8_0 e2e test in CI; the
# AVX2 build serves both (checked on the same machine). It is also the same code on every machine of this kind.
# pip's wheel cache is keyed by the sdist only, so a wheel built with other flags would be reused: the build skips
# pip's cache (--no-cache-dir), and the stamp holds the flags as well as the lock. The built wheel is kept in a cache
# of this project's own instead, outside the repository ($EMBEDSWAP_WHEEL_CACHE, default ~/.cache/embedswap/wheels),
# keyed by what decides its bytes: the lock's sha256, CMAKE_ARGS, the interpreter's tag and the machine; another
# clone (or a rebuilt environment) on the same machine installs that wheel in seconds instead of compiling. The
# wheel's own sha256, written beside it when it was built, is checked on install (--require-hashes): a cached wheel
# that changed is refused, not installed (delete its folder to rebuild): a guard against a damaged cache, not against
# someone who can write to it. A truly clean machine (an empty cache: CI, a new host) still compiles once.
# -DLLAMA_CURL=OFF because the server never downloads a model;
# -DLLAVA_BUILD=OFF leaves out the multimodal library (mtmd), which an embedding server of text never loads
# (with it, 25 min beside other jobs; without, 10.4 min wall and 8.8 CPU-minutes beside other jobs, 2026-12-04).
# The sdist also carries llama.cpp's converter: vendor/llama.cpp/{convert_hf_to_gguf.py,conversion,gguf-py} are
# copied into $V/share/llama.cpp, where embedswap.targets.llamacpp finds them to convert the model to GGUF.
# The stamp is the lock's sha256: a changed pin rebuilds the environment from scratch.
set -euo pipefail
V=${1:?usage: install-llamacpp.sh VENV_DIR}
here=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3.11}
lock="$here/requirements/llamacpp.lock"
stamp="$V/.installed"
export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAMA_CURL=OFF -DLLAVA_BUILD=OFF}"
want="$(cd "$here" && sha256sum requirements/llamacpp.lock) CMAKE_ARGS=$CMAKE_ARGS"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -d "$V/share/llama.cpp/conversion" ]; then
  echo "llama.cpp environment $V is up to date"; exit 0
fi
[ -e "$V" ] && echo "llama.cpp environment $V: the lock or the build flags changed, rebuilding it"
rm -rf "$V"
"$PY" -m venv "$V"
"$V/bin/pip" install -q --upgrade pip
dist=$(mktemp -d); trap 'rm -rf "$dist"' EXIT
# the sdist, hash-checked, kept for its converter (pip's http cache serves it again to the install below). Only
# llama-cpp-python as source: `--no-binary :all:` also applies to the build requirements pip installs to read the
# sdist's metadata, and on one clean clone here that compiled cmake from source (over 12 minutes on 2 cores; the
# download took 11 s with this flag)
awk '/^llama-cpp-python==/{on=1} on{print; if ($0 !~ /\\$/) exit}' "$lock" > "$dist/one.txt"
"$V/bin/pip" download -q --no-deps --no-binary llama-cpp-python --require-hashes -r "$dist/one.txt" -d "$dist"
# the wheel cache's key: the lock, the flags, the interpreter (cp311...) and the machine (x86_64...)
tag=$("$V/bin/python" -c 'import sys, platform; print(sys.implementation.cache_tag, platform.machine())')
key=$(printf '%s\n%s\n%s\n' "$(sha256sum < "$lock")" "CMAKE_ARGS=$CMAKE_ARGS" "$tag" | sha256sum | cut -c1-16)
cache="${EMBEDSWAP_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/embedswap/wheels}/llama-cpp-python-$key"
wheel=$(ls "$cache"/llama_cpp_python-*.whl 2>/dev/null | head -n 1 || true)
if [ -n "$wheel" ] && [ -f "$wheel.sha256" ]; then
  echo "llama.cpp: the wheel built before with these flags and this lock: $wheel"
else
  export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
  "$V/bin/pip" wheel -q --no-cache-dir --require-hashes --no-deps -r "$dist/one.txt" -w "$dist/wheel"
  built=$(ls "$dist"/wheel/llama_cpp_python-*.whl)
  # into the cache as a whole or not at all: a folder of its own, renamed into place (another build racing this one
  # keeps its own copy and leaves the one that landed first)
  mkdir -p "$(dirname "$cache")"
  part=$(mktemp -d "$cache.part.XXXXXX")
  cp "$built" "$part/"
  (cd "$part" && sha256sum "$(basename "$built")" | cut -d' ' -f1 > "$(basename "$built").sha256")
  [ -f "$cache/$(basename "$built").sha256" ] || rm -rf "$cache"  # a folder left incomplete: replaced
  mv -T "$part" "$cache" 2>/dev/null || rm -rf "$part"
  wheel=$(ls "$cache"/llama_cpp_python-*.whl | head -n 1)
fi
# the lock without llama-cpp-python's sdist, plus the wheel at its recorded hash: every file still hash-checked
awk '/^llama-cpp-python==/{skip=1} skip{if ($0 !~ /\\$/) {skip=0}; next} {print}' "$lock" > "$dist/rest.txt"
sum=$(cat "$wheel.sha256")
printf 'llama-cpp-python @ file://%s --hash=sha256:%s\n' "$wheel" "$sum" >> "$dist/rest.txt"
"$V/bin/pip" install -q --no-cache-dir --require-hashes --no-deps -r "$dist/rest.txt"
mkdir -p "$V/share/llama.cpp"
tar -xzf "$dist"/llama_cpp_python-*.tar.gz -C "$dist"
src=$(echo "$dist"/llama_cpp_python-*/vendor/llama.cpp)
cp "$src/convert_hf_to_gguf.py" "$V/share/llama.cpp/"
cp -r "$src/conversion" "$V/share/llama.cpp/conversion"
cp -r "$src/gguf-py" "$V/share/llama.cpp/gguf-py"
"$V/bin/python" -c "import llama_cpp, llama_cpp.server; print('llama.cpp env ok: llama-cpp-python', llama_cpp.__version__)"
printf '%s\n' "$want" > "$stamp"
