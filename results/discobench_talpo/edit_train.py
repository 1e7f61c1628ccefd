"""The one edit of a DiscoBench OnPolicyRL train.py that a loss reading training progress needs: in
`_update_minbatch` the loss is given `config` with the update fraction n / N added (metadisco's TRAIN_EDIT, the
line its export README shows). Exactly one call site must match; anything else is an error, nothing written.

    python results/discobench_talpo/edit_train.py TASK/discovered/train.py
"""

import sys
from pathlib import Path

from metadisco.objectives.export.formats import PROGRESS_KEY, TRAIN_EDIT

CALL = """                        network,
                        config,
                    )
                    train_state = train_state.apply_gradients(grads=grads)"""


def main(path: str) -> None:
    file = Path(path)
    text = file.read_text()
    if PROGRESS_KEY in text:
        return  # edited already
    if text.count(CALL) != 1:
        sys.exit(f"{path}: expected one loss call in _update_minbatch passing `config`, found {text.count(CALL)}")
    tmp = file.with_suffix(".py.tmp")
    tmp.write_text(text.replace(CALL, CALL.replace("config,", TRAIN_EDIT + ",", 1)))
    tmp.replace(file)


if __name__ == "__main__":
    main(sys.argv[1])
