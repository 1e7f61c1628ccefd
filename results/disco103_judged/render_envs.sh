#!/usr/bin/env bash
# Some envs' table from a judge's committed cells, before (or without) the whole judge finishing: the cells of those
# envs are copied, with the plan's settings restricted to them, into OUT/eval/cells; the judge's own command (run.sh,
# with PLAN_ENVS and PLAN_DIR) resumes from them (every cell is there: nothing trains); the copies are removed after. The numbers are
# the judge's; only the across-env aggregate differs from the whole plan's eval.md (it covers these envs alone).
#   [DEVICES=N] bash results/disco103_judged/render_envs.sh JUDGE_DIR ENV@STEPS[,ENV@STEPS...] OUT
# DEVICES: the device count the judge ran with, where it differs from this machine's (1 on the lent GPU).
# e.g. the GPU piece's two finished envs of the declared plan:
#   DEVICES=1 bash results/disco103_judged/render_envs.sh results/disco103_judged \
#     Catch-bsuite@58000,Breakout-MinAtar@1000000 results/disco103_judged/gpu_catch_breakout
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 3 ] || { echo "usage: render_envs.sh JUDGE_DIR ENV@STEPS[,ENV@STEPS...] OUT" >&2; exit 2; }
JUDGE=$1 ENVS=$2 OUT=$3
[ -f "$JUDGE/eval/cells/plan.json" ] || { echo "$JUDGE/eval/cells/plan.json not found: JUDGE_DIR is the folder holding a judge's eval/" >&2; exit 2; }
[ ! -e "$OUT" ] || { echo "$OUT exists: remove it or give another OUT" >&2; exit 2; }
mkdir -p "$OUT/eval/cells"
python - "$JUDGE/eval/cells" "$ENVS" "$OUT/eval/cells" <<'PY' || { rm -r "$OUT"; exit 2; }
import json, shutil, sys
from pathlib import Path

cells, envs, out = Path(sys.argv[1]), [e.split("@")[0] for e in sys.argv[2].split(",")], Path(sys.argv[3])
plan = json.loads((cells / "plan.json").read_text())
settings = plan["settings"]
missing = [e for e in envs if e not in settings["configs"]]
if missing:
    print(f"{', '.join(missing)} not in the judge's plan (it has {', '.join(settings['configs'])})", file=sys.stderr)
    sys.exit(2)
settings["configs"] = {e: c for e, c in settings["configs"].items() if e in envs}
for algorithm, by_env in settings.get("other_algorithms", {}).items():
    settings["other_algorithms"][algorithm] = {e: c for e, c in by_env.items() if e in envs}
(out / "plan.json").write_text(json.dumps(plan, indent=2))
copied = [p for p in sorted(cells.glob("*.json"))
          if p.name != "plan.json" and json.loads(p.read_text())["key"].split("|")[0] in envs]
for path in copied:
    shutil.copy(path, out / path.name)
print(f"{len(copied)} cells of {', '.join(envs)}", file=sys.stderr)
PY
PLAN_ENVS=$ENVS PLAN_DIR=$OUT bash results/disco103_judged/run.sh
rm -r "$OUT/eval/cells"
