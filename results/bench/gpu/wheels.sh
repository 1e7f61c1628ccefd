#!/usr/bin/env bash
# Run here, before a device call: fills .whl/ with the pure-Python wheels that env.sh installs on the lent GPU
# machine (it reaches no package registry; its image has Python 3.12 with jax, flax, optax and chex). The versions
# are constraints.txt's. Carry `.whl` with the device command. About 20 s; *.whl is ignored by git.
#   bash results/bench/gpu/wheels.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
pinned() { grep -E "^$1==" constraints.txt; }  # the tested version of package $1, as name==version
mkdir -p .whl
python3 -m pip download -q --no-deps --python-version 3.12 --only-binary=:all: -d .whl \
  "$(pinned evosax)" "$(pinned gymnax)" "$(pinned gymnasium)" "$(pinned dotmap)" "$(pinned rejax)" \
  "$(pinned distrax)" "$(pinned tfp-nightly)" "$(pinned gplearn)" "$(pinned six)"
ls .whl
