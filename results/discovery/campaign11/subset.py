"""The across-env figures of an `evaluate` output (eval.json) restricted to some of its envs, with the package's
own statistics (`metadisco.stats`: stratified-bootstrap CIs of the IQM and of P(improvement), as `evaluate`
computes them; seeds without a score lose every comparison and are left out of the IQM). Campaign 11 evaluated
six held-out envs; campaigns 9 and 10 were scored on the first five. On all six it prints `evaluate`'s figures.

    python results/discovery/campaign11/subset.py results/discovery/campaign11/eval/eval.json \
        Asterix-MinAtar,Freeway-MinAtar,PointRobot-misc,Swimmer-misc,FrozenLake-misc
"""

import json
import sys

import numpy as np

from metadisco import stats

with open(sys.argv[1]) as f:
    result = json.load(f)
envs = sys.argv[2].split(",")
methods = list(result["settings"]["methods"])
# seeds without a score (diverged, or no episode finished) are left out of the IQM, as `evaluate` does
normalised = {m: [stats.finite(result[e][m]["normalized"]["final_return"]) for e in envs] for m in methods}
print(f"envs: {', '.join(envs)}")
for m in methods:
    pooled = np.concatenate(normalised[m])
    low, high = stats.stratified_iqm_ci(normalised[m])
    print(f"IQM of normalised scores, {m:24s} {stats.iqm(pooled):.2f} [{low:.2f}, {high:.2f}]")
first = methods[0]
for other in methods[1:]:
    raw = [(np.asarray(result[e][first]["final_return"], float), np.asarray(result[e][other]["final_return"], float))
           for e in envs]
    p, (low, high) = stats.aggregate_probability_of_improvement(raw)
    print(f"P({first} > {other}) = {p:.2f} [{low:.2f}, {high:.2f}]")
