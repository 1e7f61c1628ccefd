#!/usr/bin/env bash
# The update-rule trainer's time per update (Disco103 on Catch-bsuite, update_rule_classic: 2 envs x 29
# steps, a learner step on 64 trajectories of DeepMind's 512-512 agent; 1 seed, 60 updates after a compiling run),
# at the commit before the trainer's speed-up (BEFORE) and at this checkout, alternating, 5 rounds; medians and their
# ratio. The changes: one forward pass of the agent serves the rule's inputs and the loss; the backward pass runs
# only through what the loss reads (the heads at the actions taken, not every action's); each of the meta-network's
# z_net / y_net passes runs once per source.
#   bash results/bench/update_rule_before_after.sh [BEFORE]     (idle machine; writes update_rule_before_after.txt)
set -euo pipefail
cd "$(dirname "$0")/../.."
before=${1:-06b80d0}
tree=$(mktemp -d)/before
git worktree add -q --detach "$tree" "$before"
trap 'git worktree remove --force "$tree"' EXIT
cat > "$tree/../time_update.py" <<'PY'
import dataclasses, sys, time
import jax
from metadisco.envs import make_env
from metadisco.objectives import Objective
from metadisco.objectives.registry import UPDATE_RULES
from metadisco.trainers import make_trainer
from metadisco.trainers.config import get_preset
print(metadisco_file := __import__("metadisco").__file__, file=sys.stderr)
objective = Objective(update_rule=UPDATE_RULES.make("disco"))
config = dataclasses.replace(get_preset("update_rule_classic"), total_timesteps=60 * 58)
trainer = make_trainer(config, make_env("Catch-bsuite"), objective)
train = jax.jit(trainer.train).lower(jax.random.key(0), objective.zero_meta()).compile()
jax.block_until_ready(train(jax.random.key(0), objective.zero_meta()))
start = time.perf_counter()
jax.block_until_ready(train(jax.random.key(1), objective.zero_meta()))
print(f"{1e3 * (time.perf_counter() - start) / config.num_updates:.1f}")
PY
out=results/bench/update_rule_before_after.txt
echo "# ms per update, Disco103-shaped rule (zero meta-parameters), Catch-bsuite update_rule_classic, 1 seed" > "$out"
echo "# before = $(git rev-parse --short "$before"), after = $(git rev-parse --short HEAD)$(git diff --quiet || echo ' with uncommitted changes'); $(python -c 'import platform; print(platform.processor() or platform.machine())'), $(nproc) cores" >> "$out"
for round in 1 2 3 4 5; do
  b=$(cd "$tree" && PYTHONPATH="$tree" python ../time_update.py)
  a=$(python "$tree/../time_update.py")
  echo "round $round: before $b after $a" | tee -a "$out"
done
python - "$out" <<'PY' | tee -a "$out"
import re, statistics, sys
rows = [tuple(map(float, re.findall(r"(?:before|after) ([\d.]+)", line))) for line in open(sys.argv[1])
        if line.startswith("round")]
before, after = statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
print(f"median: before {before:.1f} ms, after {after:.1f} ms; {before / after:.2f}x faster")
PY
