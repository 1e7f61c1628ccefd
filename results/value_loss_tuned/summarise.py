"""Issue 63: what the two value-loss campaigns' metrics show, per generation: the population's fitness, where the
members scored (the grid's chosen lrs; the drawn run's lr), and the ES mean on fresh seeds. Reads the committed
metrics.jsonl files only.
    python results/value_loss_tuned/summarise.py"""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent


def rows(run: str):
    for line in (HERE / run / "metrics.jsonl").read_text().splitlines():
        yield json.loads(line)


def main() -> None:
    print("grid (each member at its best of 4 lrs): generation, fitness mean / max, members per lr, "
          "mean on fresh seeds")
    for d in rows("grid"):
        (entry,) = d["tuned"].values()
        hist = " ".join(f"{k.split('=')[1]}:{v}" for k, v in entry["histogram"].items())
        mean = d.get("fitness_of_mean")
        point = (d.get("tuned_mean") or {}).get("CartPole-v1@65536", {}).get("point")
        print(f"  {d['generation']:3d}  {d['fitness_mean']:7.1f} / {d['fitness_max']:7.1f}  [{hist}]"
              + (f"  mean {mean:.1f} at {point}" if mean is not None else ""))
    print("drawn (all members at one drawn lr): generation, fitness mean / max, lr, mean on fresh seeds (preset lr)")
    for d in rows("drawn"):
        (settings,) = d["settings"].values()
        mean = d.get("fitness_of_mean")
        print(f"  {d['generation']:3d}  {d['fitness_mean']:7.1f} / {d['fitness_max']:7.1f}  lr {settings['lr']:.4f}"
              + (f"  mean {mean:.1f}" if mean is not None else ""))


if __name__ == "__main__":
    main()
