"""metadisco envs: list every env id with its observation shape and action space."""

from __future__ import annotations


def add_parser(sub, name):
    p = sub.add_parser(name, help="list environment ids with observation shape and action space")
    p.add_argument("--no-brax", action="store_true", help="skip brax (its envs take a while to build)")
    p.set_defaults(run=run)


def describe(env_id: str):
    """(spec, None) for an env that builds, (None, reason) for one listed as unavailable: an env whose
    dependency is broken or needs the network (MNISTBandit-bsuite downloads MNIST) is listed, not fatal. The
    test that trains every listed env (tests/envs/every_env.py, run by the test_every_env_* files) asks this
    same question."""
    from metadisco.envs.registry import env_spec

    try:
        return env_spec(env_id), None
    except Exception as e:
        return None, f"{type(e).__name__}: {str(e)[:60]}"


def run(args) -> int:
    from metadisco.envs.registry import brax_ids, craftax_ids, gridworld_ids, gymnax_ids, registered_ids

    ids = (gymnax_ids() if args.no_brax else gymnax_ids() + brax_ids()) + gridworld_ids() + craftax_ids() \
        + registered_ids()
    print(f"{'env id':36s} {'observation':14s} actions")
    for env_id in ids:
        spec, reason = describe(env_id)
        if spec is None:
            print(f"{env_id:36s} {'?':14s} unavailable: {reason}")
            continue
        print(f"{env_id:36s} {str(spec.obs_shape):14s} {spec.describe_actions()}")
    if not craftax_ids():
        print("(craftax/Craftax-Classic-Symbolic-v1 and craftax/Craftax-Symbolic-v1 need the craftax extra: "
              "pip install -e '.[craftax]')")
    return 0
