#!/usr/bin/env bash
# The value-loss reproduction's evaluation, declared before the run finished: the learned loss (the run's final
# ES mean) against L2 (its zero point), L2 at the sweep's best scale, its closed form (distil.py: L2 weighted
# apart for over- and underestimates; added before the run ended) and PPO's own clipped L2, on 32 fresh seeds
# (base seed 1000; meta-training drew its seeds from seed 0), at the meta-training budget (65,536 steps) and
# twice it, scored on the run's fitness (area under the curve) and on the final return (both reported), then on
# the run's held-out envs (8 seeds, with DPO beside PPO).
#   bash results/value_loss_cartpole/evaluate.sh runs/value_loss_cartpole
set -euo pipefail
cd "$(dirname "$0")/../.."
RUN=${1:-runs/value_loss_cartpole}
OUT=results/value_loss_cartpole
python $OUT/baselines.py "$RUN" "$OUT"
cp "$RUN/objective.msgpack" "$OUT/learned.msgpack"
python $OUT/distil.py "$OUT/learned.msgpack" "$OUT"   # asymmetric L2: the closed form, distilled.msgpack
methods=(--baselines "l2=$OUT/l2.msgpack,l2_scaled=$OUT/l2_scaled.msgpack,distilled=$OUT/distilled.msgpack,ppo")
for budget in 65536 131072; do
  name=$([ $budget = 65536 ] && echo 1x || echo 2x)
  metadisco evaluate "learned=$OUT/learned.msgpack" "${methods[@]}" --envs "CartPole-v1@$budget" --seeds 32 \
    --seed 1000 --score mean_return --no-progress --out "$OUT/eval_$name" 2>&1 | tee "$OUT/eval_$name.txt"
done
metadisco evaluate "learned=$OUT/learned.msgpack" --baselines "l2=$OUT/l2.msgpack,distilled=$OUT/distilled.msgpack,ppo,dpo" \
  --envs "$(python -c "import yaml,sys; print(','.join(yaml.safe_load(open('$RUN/config.yaml'))['held_out_envs']))")" \
  --seeds 8 --seed 1000 --no-progress --out "$OUT/eval_held_out" 2>&1 | tee "$OUT/eval_held_out.txt"
metadisco plot "$OUT/learned.msgpack" --out "$OUT/figures"
