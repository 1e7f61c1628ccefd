#!/usr/bin/env bash
# Not run by CI. metadisco at the newest versions pyproject.toml's ranges allow: a fresh virtual environment,
# `pip install -e ".[dev]"` WITHOUT constraints.txt (so every package, transitive ones too, comes at its newest
# allowed version), the versions it got, then a fast part of the suite in one process, stopping at the first
# failure. The README ("Versions") says what the last run found.
#
#   bash experiments/newest_versions.sh                      # tests/objectives tests/rl tests/trainers
#   bash experiments/newest_versions.sh tests/core           # other test paths
#   NEWEST_VENV=/tmp/v bash experiments/newest_versions.sh   # where the environment goes (default below)
#
# It downloads a few hundred MB from PyPI. The part of the suite is small on purpose (the trainers, objectives
# and RL pieces: where a new JAX, flax or optax would show first); the whole suite is `pytest` in that venv.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${NEWEST_VENV:-/tmp/metadisco-newest-venv}
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tests/objectives tests/rl tests/trainers)

echo "metadisco at $(git describe --always --dirty 2>/dev/null || echo '(not a git checkout)') in $PWD"
rm -rf "$venv"
python3 -m venv "$venv"
. "$venv/bin/activate"
python -m pip install -q --upgrade pip
start=$(date +%s)
python -m pip install -q -e ".[dev]"   # no -c constraints.txt: the newest versions the ranges allow
echo "installed in $(( $(date +%s) - start )) s; versions:"
python - <<'PY'
from importlib import metadata
for name in ("jax", "jaxlib", "flax", "optax", "evosax", "gymnax", "brax", "numpy", "scipy", "matplotlib",
             "gplearn", "scikit-learn", "sympy", "chex", "wandb", "pytest"):
    try:
        print(f"  {name}=={metadata.version(name)}")
    except metadata.PackageNotFoundError:
        print(f"  {name}: not installed")
PY
echo "differences from constraints.txt:"
python -m pip freeze --exclude-editable | sort | comm -13 <(grep -v '^#' constraints.txt | sort) - \
    | sed 's/^/  /' || true
start=$(date +%s)
status=0
python -m pytest -q -n 0 -x -p no:cacheprovider "${tests[@]}" || status=$?
echo "tests (${tests[*]}): exit status $status in $(( $(date +%s) - start )) s"
exit $status
