"""Population-based training (Jaderberg et al. 2017), vectorised on one machine (Flajolet et al., ICML 2022).

    config      PBTConfig: the trainer, the searched space, and the ready / exploit / explore strategies
    strategies  the strategies by name: pure numpy functions of (rng, scores, hyperparameters)
    run         the loop: N agents step k updates at once (sharded, vmapped), then exploit and explore;
                metrics.jsonl, lineage.json, checkpoints and exact resume (`metadisco pbt`)
"""
