"""The files of an export: a standalone JAX module (`jax`), or DiscoBench's OnPolicyRL `loss.py` / `optim.py`
(`discobench`), each with a README.md saying what it is, where it came from and how to use it.

DiscoBench's slots (AlexGoldie/discogen, `domains/OnPolicyRL/templates/default`; REFERENCE.md section 12):
`loss_actor_and_critic(params, traj_batch, gae, targets, network, config) -> (total, (value_loss, actor_loss,
entropy))`, with `pi, value = network.apply(params, traj_batch.obs)`, `traj_batch` a `Transition` (fields
obs, action, value, log_prob, ...), the advantage normalised per minibatch and `config["VF_COEF"]`,
`config["ENT_COEF"]`; and `scale_by_optimizer()` in `optim.py`, an optax transformation whose output its
`train.py` clips before and multiplies by -learning rate after. Its `train.py` passes no training progress, so
a loss that reads n / N takes it from `config["UPDATE_FRACTION"]`, which an edited `train.py` adds (README).
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import Any

from metadisco.core.errors import UserError
from metadisco.objectives.export.pieces import IMPORT_LINES, Source, render
from metadisco.objectives.objective import Objective
from metadisco.objectives.optimizer import Adam

FORMATS = ("discobench", "jax")
JAX_MODULE = "objective.py"
DISCOBENCH_DEFAULT_OPTIMIZER = Adam(eps=1e-5)  # DiscoBench's base optim.py: optax.scale_by_adam(eps=1e-5)
PROGRESS_KEY = "UPDATE_FRACTION"
# The one edit of DiscoBench's train.py that a progress-reading loss needs: in `_update_minbatch`, the config
# given to the loss carries n / N. train_state.step counts minibatch steps, so step // (minibatches x epochs) is
# the update n, as metadisco's trainer counts it.
TRAIN_EDIT = ('{**config, "UPDATE_FRACTION": (train_state.step // (config["NUM_MINIBATCHES"] * '
              'config["UPDATE_EPOCHS"])) / config["NUM_UPDATES"]}')


@dataclass(frozen=True)
class About:
    """Where an export came from: the OBJECTIVE label, what the user gave, the objective file read."""

    label: str
    source: str
    file: str | None
    version: str


def _args(source: Source, *base: str) -> str:
    extra = (["progress"] if source.reads_progress else []) + (["num_updates"] if source.reads_horizon else [])
    return ", ".join([*base, *extra])


def _imports(sources: list[Source]) -> str:
    """The import block (the future import that keeps metadisco's annotations unevaluated, the standard library,
    then third party, as ruff sorts them)."""
    needs = set().union(*(s.imports for s in sources))
    standard = [IMPORT_LINES[n] for n in ("base64", "typing") if n in needs]
    third = ["import jax", "import jax.numpy as jnp"] + [IMPORT_LINES[n] for n in ("numpy", "optax") if n in needs]
    third += [IMPORT_LINES["ravel_pytree"]] if "ravel_pytree" in needs else []
    return "\n".join(["from __future__ import annotations", "", *standard, *([""] if standard else []), *third])


def _functions(sources: list[Source]) -> str:
    """The source of every function the pieces call (`Source.functions`), each once, in first-needed order."""
    seen = []
    for source in sources:
        seen += [f for f in source.functions if f not in seen]
    return "\n\n\n".join(inspect.getsource(f).rstrip() for f in seen)


def _section(title: str, code: str) -> str:
    return f"# {'-' * 110}\n# {title}\n\n{code}\n"


def _spec_text(objective: Objective) -> str:
    return json.dumps(objective.to_spec(), default=str)


def _pieces(objective: Objective, meta: Any, label: str) -> dict[str, Source]:
    return {slot: render(slot, piece, meta[slot]) for slot, piece in objective.pieces().items()}


def _header(about: About, what: str, pieces: dict[str, Source], objective: Objective) -> str:
    origin = about.source if about.file is None or about.file == about.source else f"{about.source} ({about.file})"
    return (f"{what}: the objective {about.label!r}, exported by `metadisco export` (metadisco {about.version}).\n\n"
            f"Source: {origin}\nSpec: {_spec_text(objective)}\n\n"
            f"Drift:      {pieces['drift'].formula}\nValue loss: {pieces['value_loss'].formula}\n"
            f"Optimiser:  {pieces['optimizer'].formula}\n")


def docstring(text: str) -> str:
    """`text` as the body of a triple-quoted docstring (labels and paths may hold backslashes or quotes)."""
    return text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')


def _module(doc: str, sources: list[Source], blocks: list[str]) -> str:
    functions = _functions(sources)
    if functions:
        blocks = [_section("metadisco's functions that the pieces below call (their source, unchanged)", functions),
                  *blocks]
    body = "\n\n".join(block.rstrip("\n") + "\n" for block in blocks)
    return f'"""{docstring(doc)}"""\n\n{_imports(sources)}\n\n{body}'


def reads_progress(pieces: dict[str, Source]) -> bool:
    return any(s.reads_progress or s.reads_horizon for s in pieces.values())


# ---------------------------------------------------------------------------------------------------------
# --format jax


def jax_module(objective: Objective, meta: Any, about: About) -> str:
    """One module: drift, value_loss, scale_by_optimizer / make_optimizer, normalise_advantage, actor_loss."""
    pieces = _pieces(objective, meta, about.label)
    drift, value, optimizer = pieces["drift"], pieces["value_loss"], pieces["optimizer"]
    drift_args = _args(drift, "ratio", "advantage")
    extra_drift_args = drift_args[len("ratio, advantage"):]
    value_call = _args(value, "value", "traj_batch.value", "targets")
    doc = _header(about, "Standalone JAX functions", pieces, objective) + f"""
Mirror learning (Kuba et al. 2022): with r = pi_new(a|s) / pi_old(a|s) and A the advantage normalised per
minibatch, the per-sample actor loss is -(r A - drift(r, A)). In a PureJaxRL / rejax PPO loss:

    adv = normalise_advantage(gae)
    loss_actor = actor_loss(ratio, adv{extra_drift_args}).mean()
    loss_value = value_loss({value_call}).mean()
    total = loss_actor + vf_coef * loss_value - ent_coef * entropy
    tx = make_optimizer(learning_rate, max_grad_norm)
"""
    if reads_progress(pieces):
        doc += "\nprogress = n / N (update n of N, counted from 0), num_updates = N.\n"
    doc += "\nNeeds jax (and optax for the optimiser) only.\n"
    actor = f'''def normalise_advantage(advantage):
    """(A - mean) / (std + 1e-8) over the minibatch: the A every drift expects."""
    return (advantage - advantage.mean()) / (advantage.std() + 1e-8)


def actor_loss({drift_args}):
    """Per-sample mirror-learning actor loss -(r A - drift(r, A)), A normalised (normalise_advantage)."""
    return -(ratio * advantage - drift({drift_args}))'''
    make = '''def make_optimizer(learning_rate, max_grad_norm=0.5):
    """The optimiser as metadisco's trainer builds it: clip the gradient's global norm, scale it
    (scale_by_optimizer), step by -learning_rate (a float or an optax schedule of the step count)."""
    import optax

    return optax.chain(optax.clip_by_global_norm(max_grad_norm), scale_by_optimizer(),
                       optax.scale_by_learning_rate(learning_rate))'''
    if optimizer.whole_step:
        make = '''def make_optimizer(learning_rate, max_grad_norm=0.5):
    """The optimiser as metadisco's trainer builds it: scale_by_optimizer is the whole step (its own clipping and
    step size; learning_rate only for RESIDUAL), and its update takes context=OptimizerContext(...)."""
    return scale_by_optimizer(max_grad_norm, learning_rate)'''
    return _module(doc, list(pieces.values()), [
        f"READS_PROGRESS = {reads_progress(pieces)}  # drift / value_loss take the training progress n / N",
        _section("drift", drift.code), _section("value loss", value.code),
        _section("optimiser", optimizer.code + "\n\n\n" + make), _section("the actor loss", actor)])


# ---------------------------------------------------------------------------------------------------------
# --format discobench


def discobench_loss(objective: Objective, meta: Any, about: About) -> str:
    """DiscoBench's loss.py with the objective's drift and value loss."""
    pieces = _pieces(objective, meta, about.label)
    drift, value = pieces["drift"], pieces["value_loss"]
    progress = ""
    if reads_progress(pieces):
        progress = f'''
    # TRAINING PROGRESS n / N: DiscoBench's own train.py does not give it; an edited one does (README.md)
    if "{PROGRESS_KEY}" not in config:
        raise KeyError("{PROGRESS_KEY}: this loss reads training progress n / N; give it from train.py (README.md)")
    progress = config["{PROGRESS_KEY}"]
    num_updates = config["NUM_UPDATES"]
'''
    doc = _header(about, "DiscoBench OnPolicyRL loss module (loss.py)", pieces, objective) + '''
The structure and return value of DiscoBench's baseline loss.py; the actor loss is mirror learning's
-(r A - drift(r, A)) (PPO's clip objective is the PPO drift). The drift's and value loss's constants are the
objective's own, embedded here (config["CLIP_EPS"] is not read).
'''
    loss = f'''def loss_actor_and_critic(params, traj_batch, gae, targets, network, config):
    # RERUN NETWORK
    pi, value = network.apply(params, traj_batch.obs)
    log_prob = pi.log_prob(traj_batch.action)
{progress}
    # CALCULATE VALUE LOSS
    loss_value = value_loss({_args(value, "value", "traj_batch.value", "targets")}).mean()

    # CALCULATE ACTOR LOSS: -(r A - drift(r, A)), A normalised per minibatch
    ratio = jnp.exp(log_prob - traj_batch.log_prob)
    gae = (gae - gae.mean()) / (gae.std() + 1e-8)
    loss_actor = -(ratio * gae - drift({_args(drift, "ratio", "gae")})).mean()
    entropy = pi.entropy().mean()

    total_loss = loss_actor + config["VF_COEF"] * loss_value - config["ENT_COEF"] * entropy
    return total_loss, (loss_value, loss_actor, entropy)'''
    return _module(doc, [drift, value], [_section("drift", drift.code), _section("value loss", value.code),
                                         _section("the DiscoBench loss", loss)])


def discobench_optim(objective: Objective, meta: Any, about: About) -> str | None:
    """DiscoBench's optim.py, or None when the objective's optimiser is DiscoBench's own (Adam, eps 1e-5)."""
    if objective.optimizer == DISCOBENCH_DEFAULT_OPTIMIZER:
        return None
    pieces = _pieces(objective, meta, about.label)
    optimizer = pieces["optimizer"]
    if optimizer.whole_step:
        raise UserError(f"optimizer {objective.optimizer.name!r} cannot enter DiscoBench's optim.py: it reads "
                        "each layer's activations, the epoch and the training progress, and makes its own step "
                        "size, while DiscoBench's train.py gives its optimiser none of these and scales every "
                        "update by its learning rate; export --format jax writes it as one optax transformation "
                        "that takes them")
    doc = _header(about, "DiscoBench OnPolicyRL optimiser module (optim.py)", pieces, objective) + '''
DiscoBench's train.py clips the gradient's global norm (MAX_GRAD_NORM) before scale_by_optimizer() and applies
the (annealed) learning rate after it, as metadisco's trainer does around the same optimiser.
'''
    return _module(doc, [optimizer], [_section("optimiser", optimizer.code)])


# ---------------------------------------------------------------------------------------------------------
# README.md


def readme(objective: Objective, meta: Any, about: About, fmt: str, files: list[str]) -> str:
    pieces = _pieces(objective, meta, about.label)
    progress = reads_progress(pieces)
    origin = about.source if about.file is None or about.file == about.source else f"{about.source} ({about.file})"
    lines = [f"# {about.label}: an RL objective exported from metadisco", "",
             f"Written by `metadisco export {about.source} --format {fmt}` (metadisco {about.version}) from "
             f"{origin}. Plain JAX: it needs jax (numpy; optax for the optimiser), not metadisco.", "",
             f"- drift: {pieces['drift'].formula}", f"- value loss: {pieces['value_loss'].formula}",
             f"- optimiser: {pieces['optimizer'].formula}",
             f"- reads training progress n / N: {'yes' if progress else 'no'}", "",
             f"Spec: `{_spec_text(objective)}`", "", "Files of this export: " + ", ".join(f"`{f}`" for f in files),
             ""]
    if fmt == "jax":
        lines += ["## Use", "",
                  f"`{JAX_MODULE}` defines `drift`, `value_loss` (per sample), `actor_loss`, `normalise_advantage`, "
                  "`scale_by_optimizer` and `make_optimizer`; its docstring shows them inside a PureJaxRL / rejax "
                  "PPO loss. The drift expects the advantage normalised per minibatch."]
        if progress:
            lines += ["", "The drift or value loss takes `progress` = n / N (update n of N, from 0) and TA-LPO's "
                          "drift also `num_updates` = N: pass them from the training loop."]
        if pieces["optimizer"].whole_step:
            lines += ["", "The optimiser is a whole step (its own clipping and step size; no learning rate after "
                          "it): call `tx.update(grads, state, params, context=OptimizerContext(...))` at every "
                          "minibatch step, the context holding each layer's mean |activation| per unit (pytrees "
                          "like the params), which leaves are the actor's, each leaf's layer proportion, the "
                          "training proportion n / (N - 1), the epoch proportion and a key (`scale_by_optimizer`'s "
                          "docstring). DiscoBench's fixed `train.py` gives none of these, so this objective has no "
                          "`--format discobench`."]
    else:
        lines += ["## Use", "",
                  "Copy `loss.py` (and `optim.py`, if written) into a DiscoBench OnPolicyRL task (`discogen "
                  "create-task --task-domain OnPolicyRL`) whose config lets those modules change "
                  "(`OnPolicyRL_loss`, `OnPolicyRL_optim` or `OnPolicyRL_all`; `--use-base` fills the other "
                  "editable modules with DiscoBench's baselines), then run the task's `main.py`."]
        if "optim.py" not in files:
            lines += ["", "The objective's optimiser is DiscoBench's own (Adam, eps 1e-5): no `optim.py` is "
                          "written; keep the task's."]
        if progress:
            lines += ["", "This objective reads training progress n / N, which DiscoBench's fixed `train.py` "
                          "does not give the loss. Use a task whose config has `change_train: true` as well as "
                          "`change_loss: true` (`OnPolicyRL_all` with `--use-base`, or your own config) and make "
                          "one edit in its `train.py`: in `_update_minbatch`, pass the loss, instead of `config`,",
                      "", f"    {TRAIN_EDIT}", "",
                      f"(`train_state.step // (minibatches x epochs)` is the update n). Without it `loss.py` "
                      f"stops with a KeyError naming `{PROGRESS_KEY}`."]
    return "\n".join(lines) + "\n"


def export_files(objective: Objective, meta: Any, about: About, fmt: str) -> dict[str, str]:
    """{file name: text} of an export in `fmt` (`FORMATS`); an unexportable piece is a `UserError`. `objective` is
    one of an algorithm that exports (`metadisco.trainers.algorithm.check_exportable`, which `metadisco export`
    calls first: this layer does not know algorithms)."""
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {fmt!r}; formats: {', '.join(FORMATS)}")
    if fmt == "jax":
        files = {JAX_MODULE: jax_module(objective, meta, about)}
    else:
        files = {"loss.py": discobench_loss(objective, meta, about)}
        optim = discobench_optim(objective, meta, about)
        if optim is not None:
            files["optim.py"] = optim
    files["README.md"] = readme(objective, meta, about, fmt, [*files, "README.md"])
    return files
