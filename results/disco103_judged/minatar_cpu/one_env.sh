#!/usr/bin/env bash
# One env's table from the judge's committed cells, before the whole judge has finished (session 48): its cells are
# copied with the plan's settings restricted to that env into OUT/cells, and the judge's own command, restricted to
# that env, resumes from them (every cell is there: nothing trains), and the copies are removed. The numbers are the
# judge's; only the across-env aggregate differs from the final eval.md's (one env here).
#   bash results/disco103_judged/minatar_cpu/one_env.sh Breakout-MinAtar [OUT]
set -euo pipefail
cd "$(dirname "$0")/../../.."
ENV=$1
OUT=${2:-results/disco103_judged/minatar_cpu/${ENV%%-*}_only}
CELLS=results/disco103_judged/minatar_cpu/eval/cells
[ ! -e "$OUT" ] || { echo "$OUT exists: remove it or give another OUT" >&2; exit 2; }
mkdir -p "$OUT/cells"
python - "$CELLS" "$ENV" "$OUT/cells" <<'PY'
import json, shutil, sys
from pathlib import Path

cells, env, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
plan = json.loads((cells / "plan.json").read_text())
settings = plan["settings"]
settings["configs"] = {e: c for e, c in settings["configs"].items() if e == env}
for algorithm, by_env in settings.get("other_algorithms", {}).items():
    settings["other_algorithms"][algorithm] = {e: c for e, c in by_env.items() if e == env}
(out / "plan.json").write_text(json.dumps(plan, indent=2))
copied = [p for p in sorted(cells.glob("*.json"))
          if p.name != "plan.json" and json.loads(p.read_text())["key"].startswith(env + "|")]
for path in copied:
    shutil.copy(path, out / path.name)
print(f"{len(copied)} cells of {env}", file=sys.stderr)
PY
metadisco --no-progress evaluate disco103=runs/disco103.msgpack --baselines ppo,dpo --envs "$ENV@156250" \
  --seeds 16 --seed 2000 --tune lr=3e-4,1e-3,3e-3,1e-2 --eval-episodes 16 --resume --out "$OUT" 2>&1 | tee "$OUT.txt"
rm -r "$OUT/cells"
