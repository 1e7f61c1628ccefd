"""The calibration map: where DPO beats or loses to PPO on this machine, by env family and budget.

Reads every `<root>/<family>/<fraction>/eval.json` written by `results/calibration/run.sh` (`metadisco evaluate
dpo --baselines ppo`, 8 seeds, each family's preset) and writes

- `<root>/map.md`: per family and budget fraction, P(DPO > PPO) with its 95% CI and the IQM of PPO-normalised
  scores of both methods (all from `evaluate`'s own aggregate, which eval.json records), then per env;
- `<root>/map.png`: P(DPO > PPO) against the fraction of the preset budget, a line per family, CIs as bands.

    python analysis/calibration_map.py results/calibration
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

from metadisco.evaluate.layout import read_report

FAMILIES = ("classic", "bsuite", "misc", "minatar", "brax")


def load(root: Path) -> dict[str, dict[Fraction, dict]]:
    """{family: {fraction: eval.json}} for every finished evaluation under `root`."""
    out: dict[str, dict[Fraction, dict]] = {}
    for path in sorted(root.glob("*/*/eval.json")):
        family, fraction = path.parent.parent.name, Fraction(path.parent.name.replace("_", "/"))
        out.setdefault(family, {})[fraction] = read_report(path)
    return out


def _ci(block) -> str:
    if not block or block.get("ci95") is None:
        return "n/a"
    value = block.get("p", block.get("iqm"))
    return f"{value:.2f} [{block['ci95'][0]:.2f}, {block['ci95'][1]:.2f}]"


def table(results: dict[str, dict[Fraction, dict]]) -> str:
    lines = ["# Calibration map: DPO against PPO on this machine", "",
             "Made by `bash results/calibration/run.sh` then `python analysis/calibration_map.py results/calibration`.",
             "Each cell: 8 seeds per method and env, the same seed keys for both, each family's preset settings "
             "(PureJaxRL's), final return; P(DPO > PPO) averaged over the family's envs with a stratified "
             "bootstrap 95% CI; IQM of scores normalised as (score - random) / (PPO mean - random).", "",
             "| family | fraction of preset | env steps | P(DPO > PPO) [95% CI] | P on area under curve | "
             "IQM normalised, DPO | IQM normalised, PPO | envs |",
             "|---|---|---:|---|---|---|---|---|"]
    per_env = ["", "## Per env: P(DPO > PPO) on the final return", "",
               "| family | env | by fraction of the preset budget |", "|---|---|---|"]
    for family in [f for f in FAMILIES if f in results] + sorted(set(results) - set(FAMILIES)):
        rows: dict[str, list[str]] = {}
        for fraction, report in sorted(results[family].items()):
            agg = report["aggregate"]
            key = "dpo > ppo"
            p = agg["probability_of_improvement"][key]
            area = agg.get("probability_of_improvement_by_score", {}).get("mean_return", {}).get(key)
            steps = sorted(set(report["settings"]["timesteps"].values()))
            lines.append(f"| {family} | {fraction} | {', '.join(f'{s:,}' for s in steps)} | {_ci(p)} | "
                         f"{_ci(area)} | {_ci(agg['iqm_normalized'].get('dpo'))} | "
                         f"{_ci(agg['iqm_normalized'].get('ppo'))} | {len(report['envs'])} |")
            for env, value in p["per_env"].items():
                rows.setdefault(env, []).append(f"{fraction}: {value:.2f}")
        for env, cells in rows.items():
            per_env.append(f"| {family} | {env} | {', '.join(cells)} |")
    return "\n".join(lines + per_env) + "\n"


def figure(results: dict[str, dict[Fraction, dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for family in [f for f in FAMILIES if f in results]:
        points = sorted(results[family].items())
        xs = [float(f) for f, _ in points]
        blocks = [r["aggregate"]["probability_of_improvement"]["dpo > ppo"] for _, r in points]
        ps = [b["p"] for b in blocks]
        lo = [b["ci95"][0] if b["ci95"] else b["p"] for b in blocks]
        hi = [b["ci95"][1] if b["ci95"] else b["p"] for b in blocks]
        (line,) = ax.plot(xs, ps, marker="o", label=family)
        ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.15)
    ax.axhline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_xscale("log", base=2)
    ax.set_ylim(0, 1)
    ax.set_xlabel("fraction of the family's preset budget")
    ax.set_ylabel("P(DPO > PPO), 95% CI")
    ax.set_title("Where DPO beats PPO here (8 seeds, presets)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python analysis/calibration_map.py RESULTS_DIR", file=sys.stderr)
        return 2
    root = Path(argv[0])
    results = load(root)
    if not results:
        print(f"no <family>/<fraction>/eval.json under {root}", file=sys.stderr)
        return 2
    (root / "map.md").write_text(table(results))
    figure(results, root / "map.png")
    print(f"wrote {root / 'map.md'} and {root / 'map.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
