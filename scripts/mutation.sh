#!/usr/bin/env bash
# Mutation testing of the deciding modules with cosmic-ray (issue 23): `make mutation` (not in CI: see README).
# Works on a copy of lib/ and tests/ in $WORK, so the checkout is never mutated; one session per module, each with
# the unit tests that cover it; prints the kill rate per module and the surviving mutants.
#   COSMIC_RAY=path/to/cosmic-ray MODULES="vectors redact" scripts/mutation.sh
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PY:-$REPO/.venvs/kit/bin/python}
CR=${COSMIC_RAY:-cosmic-ray}
WORK=${WORK:-$(mktemp -d /tmp/embedswap-mutation.XXXXXX)}
MODULES=${MODULES:-"vectors analysis/intervals redact contract"}
declare -A TESTS=(
  [vectors]="tests/test_vector_diff.py tests/test_properties.py -k 'diff or by_hand or index or token or norms or cosine or rescaled or permuted'"
  [analysis/intervals]="tests/test_properties.py tests/test_intervals.py"
  [redact]="tests/test_properties.py tests/test_security.py -k 'secret or credentials or redact'"
  [contract]="tests/test_properties.py tests/test_contract.py"
)
mkdir -p "$WORK"
cp -r "$REPO/lib" "$REPO/tests" "$REPO/data" "$REPO/pyproject.toml" "$WORK/"
cd "$WORK"
for module in $MODULES; do
  name=${module//\//_}
  cat > "$name.toml" <<TOML
[cosmic-ray]
module-path = "lib/embedswap/$module.py"
timeout = 120.0
excluded-modules = []
test-command = "env PYTHONPATH=$WORK/lib:$WORK/tests HF_HUB_OFFLINE=1 EMBEDSWAP_HYPOTHESIS_EXAMPLES=15 $PY -m pytest -x -q -p no:cacheprovider -p no:randomly -m 'not e2e' ${TESTS[$module]}"
[cosmic-ray.distributor]
name = "local"
TOML
  "$CR" init "$name.toml" "$name.sqlite" >/dev/null
  "$CR" baseline "$name.toml" >/dev/null || { echo "$module: the unaltered tests fail"; exit 1; }
  "$CR" exec "$name.toml" "$name.sqlite"
  echo "== $module"; cr-rate "$name.sqlite" | sed 's/^/survival rate: /'
  cr-report --show-pending "$name.sqlite" | grep -B1 -A12 "test outcome: TestOutcome.SURVIVED" | grep -E "^\[|--- |\+\+\+ |^[-+] " || true
done
echo "work folder: $WORK"
