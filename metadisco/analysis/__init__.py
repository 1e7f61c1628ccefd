"""Analysis of discovered objectives and of runs: figures, parametric and symbolic distillation of a drift into
a closed form, and a markdown report of a run.

Modules: `figures` (every figure: `figures.meta_curve` of a run, `figures.eval_curves` of an evaluation,
`figures.objective` of an objective's pieces beside PPO's / DPO's / L2 / Adam), `surfaces` (evaluating pieces on
grids), `families` (the PPO and DPO closed forms in float64), `validity` (numerical checks of a drift),
`parametric`, `sym` and `symbolic` (distillation), `collect` (where (r, A) fall while training), `distil`,
`inputs` (the OBJECTIVE argument), `report`.
"""
