# Sourced by the install-*.sh scripts: make a venv and install locked packages into it with uv when make passes one
# (UV=.venvs/uv/bin/uv, `make uv`), with the venv's own pip otherwise. uv installs the same hashed locks: parallel
# downloads, files linked from its cache. Measured on this 2-core host (docs/testing.md): the kit's lock plus torch in
# 7 s with uv where pip took minutes; the environments of `make demo` are most of its set-up.
# new_venv DIR: a fresh venv with pip in it (some scripts and tests call DIR/bin/pip)
# venv_install DIR ARGS...: `pip install -q ARGS` into DIR
new_venv() {
  rm -rf "$1"
  if [ -n "${UV:-}" ] && [ -x "$UV" ]; then
    "$UV" venv -q --seed -p "${PY:-python3.11}" "$1"
  else
    "${PY:-python3.11}" -m venv "$1"
    "$1/bin/pip" install -q --upgrade pip
  fi
}

venv_install() {
  local dir=$1; shift
  if [ -n "${UV:-}" ] && [ -x "$UV" ]; then
    # uv reads no pip configuration: pip's find-links (this kind of machine's local CPU torch) are passed on
    "$UV" pip install -q --python "$dir/bin/python" ${PIP_FIND_LINKS:+--find-links "$PIP_FIND_LINKS"} "$@"
  else
    "$dir/bin/pip" install -q "$@"
  fi
}

# torch 2.13.0, the CPU build where pip's find-links hold it (pip's own choice there), else from the index
torch_spec() {
  local local_wheel
  local_wheel=$(ls "${PIP_FIND_LINKS:-/nonexistent}"/torch-2.13.0+cpu-*.whl 2>/dev/null | head -1 || true)
  echo "${local_wheel:-torch==2.13.0}"
}
