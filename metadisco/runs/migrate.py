"""What older versions of metadisco wrote, read as this version writes it: the one place that knows their records.

A command that resumes from a stored plan (an evaluation's, a leaderboard's cells) compares it with the plan it
would write now; `upgrade_records` brings the stored one up to date first, so that a change in how a record is
written, with the numbers unchanged, does not orphan the cells of a run made before it. Two kinds of record change:

- **config records** (`metadisco.trainers.config.config_to_dict`): in 0.1.0 and 0.2.0 every config held, as
  fields, PQN's epsilon settings (`eps_start`, `eps_finish`, `eps_decay`, `reward_scale`), an update-rule config
  the replay's (`replay_capacity`, `replay_batch`, `max_abs_update`), and the settings only some algorithms read
  (PPO's entropy and value coefficients; PPO's and PQN's epochs and minibatches; the gradient clip of PPO, PQN and
  DQN); they are now the options of the algorithms that have them (`FORMER_FIELDS`), under the same names, so a
  record of an algorithm that has one reads as it was. A record of an algorithm without the option drops it where
  it holds the value every config held then, or None (a static config's blank of a traced setting); any other value
  is kept, and then differs: such a record was not of a default config.
- **objective specs** (`Objective.to_spec`): a spec is read and written again, so that options a piece has gained
  since (the LPO drifts' `floor`, written at its default 0 since 0.2.0), and their defaults, compare equal.

And whole files, or lines, by their schema version:

- **eval.json** (`upgrade_report`): schema 2 (`REPORT_SCHEMA`) is `{"schema", "settings", "envs", "aggregate"}`.
  Files without a schema are version 1, in one of two layouts: the same sections, or (the earliest) each env id
  beside "settings" and "aggregate". A newer schema than this version writes is refused, naming both.
- **a run directory's config.yaml** (meta-training's and PBT's; `read_config_schema`): schema 2 (`CONFIG_SCHEMA`)
  is `schema: 2`, first, then every section of the resolved config. Files without one are version 1, which left
  out meta-training's sections added after 0.1.0 (sampling, normalise, combine, validation, plugins, hyper) while
  they held their defaults: read, they take the defaults, so a version-1 file parses to the config it was written
  from, and a resume compares it as read and written again (`metadisco.runs.rundir.RunDir.resume_point`).
- **metrics.jsonl lines** (`upgrade_metrics_line`): schema 2 (`METRICS_SCHEMA`) lines carry `"schema": 2`, first.
  Lines without one are version 1; the oldest of them name a paired run's control scores "ppo" (now "baseline",
  whatever the control's algorithm). A run resumed across versions holds lines of both, each read by its own.
"""

from __future__ import annotations

from typing import Any

from metadisco.core.errors import UserError

# TrainConfig fields of 0.1.0 and 0.2.0 that are now algorithms' own options, at the value every config held then.
FORMER_FIELDS = {"eps_start": 1.0, "eps_finish": 0.05, "eps_decay": 0.1, "reward_scale": 1.0,
                 "replay_capacity": 1024, "replay_batch": 64, "max_abs_update": 1.0,
                 "update_epochs": 4, "num_minibatches": 4, "ent_coef": 0.01, "vf_coef": 0.5, "max_grad_norm": 0.5}
REPORT_SCHEMA = 2  # eval.json's: the version `metadisco evaluate` writes
CONFIG_SCHEMA = 2  # a run directory's config.yaml: the version `metadisco meta-train` and `metadisco pbt` write
METRICS_SCHEMA = 2  # a metrics.jsonl line's: the version meta-training and PBT write
REPORT_SECTIONS = ("settings", "envs", "aggregate")  # a report's sections, in the order eval.json writes them
CONFIG_KEYS = frozenset({"algorithm", "num_envs", "num_steps", "total_timesteps"})  # what marks a config record


def upgrade_config_record(record: dict) -> dict:
    """A config record of an older version as this one writes it (the module docstring); a current one comes back
    equal."""
    from metadisco.trainers.algorithm import get_algorithm, option_names

    try:
        algorithm = get_algorithm(str(record.get("algorithm", "ppo")))
    except UserError:
        return record  # an algorithm of a plugin not loaded: left as it is
    own = set(option_names(algorithm))

    def former(k: str, v: Any) -> bool:
        return k in FORMER_FIELDS and k not in own and (v is None or v == FORMER_FIELDS[k])

    return {k: v for k, v in record.items() if not former(k, v)}


def upgrade_spec(spec: dict) -> dict:
    """An objective spec as this version writes it: read and written again (a spec that does not read, e.g. one of
    a plugin not loaded, is left as it is)."""
    from metadisco.core.schema import plain_data
    from metadisco.objectives import Objective

    try:  # as plain data, as a plan stores it (a piece's tuple options, e.g. `hidden`, as lists)
        return plain_data(Objective.from_spec(spec).to_spec())
    except (UserError, TypeError, ValueError):
        return spec


def upgrade_records(tree: Any) -> Any:
    """`tree` (plain JSON data: a plan's settings, a cell's identity) with every config record and every objective
    spec (a mapping under the key "spec") in it upgraded."""
    if isinstance(tree, dict):
        if set(tree) >= CONFIG_KEYS:
            return upgrade_config_record(tree)
        return {k: upgrade_spec(v) if k == "spec" and isinstance(v, dict) else upgrade_records(v)
                for k, v in tree.items()}
    if isinstance(tree, list):
        return [upgrade_records(v) for v in tree]
    return tree


def upgrade_report(report: Any, source: str = "eval.json") -> dict:
    """A parsed eval.json of any schema as this version holds it: {"settings", "envs", "aggregate"}, envs in the
    file's order (the module docstring); anything else is a one-line `UserError` naming `source`."""
    if not isinstance(report, dict) or "settings" not in report or "aggregate" not in report:
        found = sorted(report) if isinstance(report, dict) else type(report).__name__
        raise UserError(f"{source} is not an eval.json report: expected the keys schema, settings, envs and "
                        f"aggregate, got {found}")
    schema = checked_schema(report.get("schema", 1), REPORT_SCHEMA, source)
    if isinstance(report.get("envs"), dict):  # schema 2, or schema 1 in the sections' layout
        return {name: report[name] for name in REPORT_SECTIONS}
    if schema >= 2:  # only schema 1 has the layout of env ids beside the sections
        raise UserError(f"{source} is damaged: schema {schema} holds its envs under \"envs\", which it lacks")
    envs = {key: value for key, value in report.items() if key not in ("settings", "aggregate", "schema")}
    return {"settings": report["settings"], "envs": envs, "aggregate": report["aggregate"]}


def upgrade_metrics_line(line: Any, source: str) -> dict:
    """A parsed metrics.jsonl line of any schema as this version writes it, without its "schema" (a property of
    the line); anything else is a one-line `UserError` naming `source` (the file and line number)."""
    if not isinstance(line, dict):
        raise UserError(f"{source} is damaged: a metrics line is a JSON object, got {type(line).__name__}")
    line = dict(line)
    schema = checked_schema(line.pop("schema", 1), METRICS_SCHEMA, source)
    if schema == 1 and "ppo" in line and "baseline" not in line:
        line["baseline"] = line.pop("ppo")
    return line


def read_config_schema(data: Any, source: str) -> Any:
    """A config's plain data (a meta-training or PBT config; a run directory's config.yaml) without its "schema"
    key, checked (a file without one is version 1, which reads as it is: the module docstring); a config that is
    not a mapping is left for the parser to name."""
    if not isinstance(data, dict) or "schema" not in data:
        return data
    data = dict(data)
    checked_schema(data.pop("schema"), CONFIG_SCHEMA, source)
    return data


def checked_schema(schema: Any, current: int, source: str) -> int:
    """`schema` if it is a version this metadisco reads (1 to `current`); otherwise a one-line `UserError` naming
    `source`."""
    if not isinstance(schema, int) or isinstance(schema, bool) or schema < 1:
        raise UserError(f"{source} is damaged: its schema is {schema!r}, not a positive integer")
    if schema > current:
        raise UserError(f"{source} has schema {schema}, newer than this metadisco reads ({current}); "
                        "upgrade metadisco to read it")
    return schema
