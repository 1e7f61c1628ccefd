"""Validation of experiments/short_long_minatar.yaml at 625k steps (Freeway and Seaquest, 2 seeds each), timed
both ways on 2 CPU devices: the paired program of (ES mean, PPO), one row per device, task after task (the
validation before it had devices of its own), against the mean alone in a one-device program per task, Freeway on
device 0 and Seaquest on device 1 at once (`MetaProblem.own_device`); and each one-device program alone.
PPO stands in for the mean (the same program and cost).

    python results/bench/validation_layout.py > results/bench/validation_layout.txt   # about 25 min
"""
import os
import sys
import time

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
os.environ["JAX_ENABLE_COMPILATION_CACHE"] = "false"
import jax
import numpy as np

from metadisco.envs import make_env
from metadisco.meta.tasks import make_population_program
from metadisco.objectives import BUILTIN_OBJECTIVES
from metadisco.parallel import hosts
from metadisco.parallel.sharding import make_mesh
from metadisco.runs.seeds import resolve_config
from metadisco.trainers import make_trainer
from metadisco.trainers.hyper import hyper_of, stack, static_of

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 625000
obj = BUILTIN_OBJECTIVES["ppo"]
devs = jax.devices()
mesh2 = make_mesh(devs)
meshes = [make_mesh(devs[:1]), make_mesh(devs[1:2])]
S = 2
keys = np.asarray(jax.random.split(jax.random.PRNGKey(3), 2 * S)).reshape(2, S, -1)
meta = obj.zero_meta()
rows = lambda n: jax.tree.map(lambda x: np.stack([x] * n), meta)
progs = {}
for i, env_id in enumerate(["Freeway-MinAtar", "Seaquest-MinAtar"]):
    cfg = resolve_config(env_id, timesteps=steps)
    train = make_trainer(static_of(cfg), make_env(env_id), obj).train
    p2 = make_population_program(train, "final_return", cfg, mesh2)
    p1 = make_population_program(train, "final_return", cfg, meshes[i])
    h = lambda n, cfg=cfg: stack([hyper_of(cfg)] * n)
    m = meshes[i]
    progs[env_id] = (
        lambda p2=p2, h=h: p2(hosts.to_global(rows(2), mesh2), hosts.to_global(keys, mesh2),
                              hosts.to_global(h(2), mesh2)),
        lambda p1=p1, h=h, m=m: p1(hosts.to_global(rows(1), m), hosts.to_global(keys[:1], m), hosts.to_global(h(1), m)))
    t = time.perf_counter()
    progs[env_id][0]().block_until_ready()
    progs[env_id][1]().block_until_ready()
    print(env_id, f"compile+first calls {time.perf_counter() - t:.1f}s", flush=True)
for rep in range(2):
    t = time.perf_counter()
    for e in progs:
        np.asarray(progs[e][0]())
    paired = time.perf_counter() - t
    t = time.perf_counter()
    outs = [progs[e][1]() for e in progs]
    [np.asarray(o) for o in outs]
    conc = time.perf_counter() - t
    alone = {}
    for e in progs:
        t = time.perf_counter()
        np.asarray(progs[e][1]())
        alone[e] = time.perf_counter() - t
    print(f"rep {rep}: paired serial {paired:.1f}s; means on separate devices at once {conc:.1f}s; "
          f"each alone {alone}", flush=True)
