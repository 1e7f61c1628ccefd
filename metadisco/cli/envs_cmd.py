"""metadisco envs: list every env id with its observation shape and action space."""

from __future__ import annotations


def add_parser(sub, name):
    p = sub.add_parser(name, help="list environment ids with observation shape and action space")
    p.add_argument("--no-brax", action="store_true", help="skip brax (its envs take a while to build)")
    p.set_defaults(run=run)


def run(args) -> int:
    from metadisco.envs.registry import brax_ids, env_spec, gymnax_ids, registered_ids

    ids = (gymnax_ids() if args.no_brax else gymnax_ids() + brax_ids()) + registered_ids()
    print(f"{'env id':28s} {'observation':14s} actions")
    for env_id in ids:
        try:
            spec = env_spec(env_id)
        except Exception as e:  # an env whose dependency is broken is listed, not fatal
            print(f"{env_id:28s} {'?':14s} unavailable: {type(e).__name__}: {str(e)[:60]}")
            continue
        print(f"{env_id:28s} {str(spec.obs_shape):14s} {spec.describe_actions()}")
    return 0
