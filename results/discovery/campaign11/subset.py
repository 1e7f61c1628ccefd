"""The across-env figures of an `evaluate` output (eval.json) restricted to some of its envs: the same
`metadisco.evaluate.summary.aggregate` that `evaluate` calls, on the per-seed scores eval.json records. Campaign
11 evaluated six held-out envs; campaigns 9 and 10 were scored on the first five. On all six it prints
`evaluate`'s figures. An optional third argument names the method compared with the others (default: the
evaluated objective, as `evaluate` does); `dpo` gives P(dpo > ppo), the calibration in ../README.md.

    python results/discovery/campaign11/subset.py results/discovery/campaign11/eval/eval.json \
        Asterix-MinAtar,Freeway-MinAtar,PointRobot-misc,Swimmer-misc,FrozenLake-misc [dpo]
"""

import sys
from types import SimpleNamespace

import numpy as np

from metadisco import stats
from metadisco.evaluate.layout import read_report
from metadisco.evaluate.summary import aggregate

result = read_report(sys.argv[1])
envs = sys.argv[2].split(",")
methods = list(result["settings"]["methods"])
compared = sys.argv[3] if len(sys.argv) > 3 else methods[0]
if compared not in methods:
    sys.exit(f"subset.py: no method {compared!r} in {sys.argv[1]}; it has {', '.join(methods)}")
by_env = result["envs"]
runs = {e: {m: SimpleNamespace(final_return=np.asarray(by_env[e][m]["final_return"], float)) for m in methods}
        for e in envs}
normalised = {e: {m: stats.finite(by_env[e][m]["normalized"]["final_return"]) for m in methods} for e in envs}
summary = aggregate(runs, normalised, {}, compared, [m for m in methods if m != compared], result["settings"]["seed"],
                    scores=("final_return",))  # the one score it reads back
print(f"envs: {', '.join(envs)}")
for m in methods:
    block = summary["iqm_normalized"][m]
    low, high = block["ci95"]
    print(f"IQM of normalised scores, {m:24s} {block['iqm']:.2f} [{low:.2f}, {high:.2f}]")
for comparison, block in summary["probability_of_improvement"].items():
    low, high = block["ci95"]
    print(f"P({comparison}) = {block['p']:.2f} [{low:.2f}, {high:.2f}]")
