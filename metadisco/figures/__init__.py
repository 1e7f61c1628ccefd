"""Every figure metadisco draws (PNG, matplotlib's Agg backend, files only), and the one way they are saved.

    meta_curve     a meta-training run: meta_curve.png (drawn at the end of `meta-train`) and
                   population_curve.png (`plot RUN_DIR`)
    eval_curves    a held-out evaluation: learning curves per env and the aggregate figure (`evaluate`)
    objective      an objective's pieces beside PPO / DPO / L2 / Adam (`plot`)
    sweep          a hyperparameter sweep: return against each setting, learning curves (`sweep`)
    pbt            a PBT run: every agent's settings and returns, the best agent's line (`pbt`)

matplotlib is imported by these modules only, so training and meta-training without figures never load it.
"""

from __future__ import annotations

import io
from pathlib import Path


def pyplot():
    """matplotlib.pyplot on the Agg backend (files only; never a window)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: str | Path, dpi: int, tight: bool = True) -> Path:
    """Write `fig` to `path` as PNG atomically (never a half-written file) and close it."""
    from metadisco.core.io import atomic_write_bytes

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, **({"bbox_inches": "tight"} if tight else {}))
    pyplot().close(fig)
    atomic_write_bytes(path, buffer.getvalue())
    return Path(path)
