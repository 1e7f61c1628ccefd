"""Every random stream's tag: the numbers that split one seed into independent streams, in one place.

A stream is `jax.random.fold_in(parent, TAG)` (or numpy's `default_rng([seed, TAG])`). Two streams of one parent
with the same tag would be the same numbers, so each family below lists the tags of one parent, and
`tests/core/test_streams.py` checks they differ. The values never change: every committed result's keys come from
them.

Meta-training, parent: the run's base key, whose generation g draws from `fold_in(base, g)`; so these tags sit
at the top of the int32 range, where no generation count reaches.
"""

from __future__ import annotations

# -- meta-training: fold_in(base key, TAG); generations use 0, 1, 2, ...
META_EVAL_STREAM = 0x7FFFFFFF  # fresh-key evaluation of a meta-parameter (`meta.problem`), then per task index
ES_START_STREAM = 0x7FFFFFFE  # the ES's start point (`meta.step`, `meta.start`)
ES_INIT_STREAM = 0x7FFFFFFD  # the strategy's initial state (`meta.step`)
VALIDATION_STREAM = 0x7FFFFFFC  # validation tasks' keys (`meta.problem`), then per task index
REFERENCE_STREAM = 0x7FFFFFFB  # the reference (handcrafted control) runs' keys (`meta.problem`), per task index
PROBE_STREAM = 0x7FFFFFFA  # the sigma probe's runs (`meta.probe`), per task index
META_STREAMS = (META_EVAL_STREAM, ES_START_STREAM, ES_INIT_STREAM, VALIDATION_STREAM, REFERENCE_STREAM, PROBE_STREAM)

# -- a generation's task draw: fold_in(generation key, TAG) (`meta.tasks`)
TASK_SAMPLE_STREAM = 0x5A3D  # which tasks a generation trains on
TASK_SETTINGS_STREAM = 0x5CA1  # the settings drawn for them (`draw_settings`), then per task index
TASK_STREAMS = (TASK_SAMPLE_STREAM, TASK_SETTINGS_STREAM)

# -- one agent's training key: fold_in(training key, TAG)
GREEDY_EVAL_STREAM = 0x6576616C  # "eval": the deterministic evaluation episodes after training (`trainers.greedy`)

# -- a command's seed: fold_in(PRNGKey(seed), TAG)
SELECTION_STREAM = 0x73656C  # "sel": an evaluation's and a leaderboard's selection seeds (`evaluate`)

# -- numpy streams: default_rng([seed, TAG])
PBT_INIT_STREAM = 0x1417  # PBT's initial settings (round r draws from [seed, r]: r never reaches this)
SWEEP_RANDOM_STREAM = 0x5EED  # a random sweep's points
