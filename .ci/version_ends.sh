#!/usr/bin/env bash
# Not run by CI. metadisco at either end of pyproject.toml's version ranges: a fresh virtual environment, metadisco
# with its dev extra installed WITHOUT constraints.txt, the versions it got, then a fast part of the suite in one
# process, stopping at the first failure. The documentation's installation page says what the last runs found.
#
#   bash .ci/version_ends.sh newest                  # every package at the newest version the ranges allow
#   bash .ci/version_ends.sh oldest                  # each direct requirement at its range's lower end
#   bash .ci/version_ends.sh oldest tests/core       # other test paths (default: below)
#   VERSIONS_VENV=/tmp/v bash .ci/version_ends.sh newest   # where the environment goes
#
# newest: pip's resolver, which takes the newest allowed version of every package, transitive ones too.
# oldest: uv's `--resolution lowest-direct`: metadisco's own requirements (and the dev extra's) at the lowest
# version their ranges allow, what those need at its newest. It downloads a few hundred MB from PyPI. The part of
# the suite is small on purpose (the trainers, objectives and RL pieces: where another JAX, flax, optax or numpy
# would show first); the whole suite is `pytest` in that venv.
set -euo pipefail
cd "$(dirname "$0")/.."
end=${1:-}
case "$end" in
  newest|oldest) shift ;;
  *) echo "usage: bash .ci/version_ends.sh newest|oldest [TEST PATH ...]" >&2; exit 2 ;;
esac
venv=${VERSIONS_VENV:-/tmp/metadisco-$end-venv}
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(tests/objectives tests/rl tests/trainers)

echo "metadisco at $(git describe --always --dirty 2>/dev/null || echo '(not a git checkout)') in $PWD: the $end versions"
rm -rf "$venv"
python3 -m venv "$venv"
. "$venv/bin/activate"
python -m pip install -q --upgrade pip
start=$(date +%s)
if [ "$end" = newest ]; then
  python -m pip install -q -e ".[dev]"   # no -c constraints.txt: the newest versions the ranges allow
else
  python -m pip install -q uv
  uv pip install -q --python "$venv/bin/python" --resolution lowest-direct -e ".[dev]"
fi
echo "installed in $(( $(date +%s) - start )) s; versions:"
python - <<'PY'
from importlib import metadata
for name in ("jax", "jaxlib", "flax", "optax", "evosax", "gymnax", "brax", "numpy", "scipy", "matplotlib",
             "gplearn", "scikit-learn", "sympy", "pyyaml", "tqdm", "six", "chex", "wandb", "pytest"):
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
