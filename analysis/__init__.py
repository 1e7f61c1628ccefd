"""Analysis of discovered objectives: figures of each piece beside PPO's / DPO's / L2 / Adam, parametric and
symbolic distillation of a drift into a closed form, and a markdown report of a run.

Modules: `surfaces` (evaluating pieces on grids), `families` (the PPO and DPO closed forms in float64),
`plots`, `parametric`, `symbolic`, `collect` (where (r, A) fall while training), `distil`, `report`.
"""
