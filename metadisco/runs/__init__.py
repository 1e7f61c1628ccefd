"""Layer 5: runs of trained objectives. Training several seeds of one objective (`seeds`), the random
policy's score (`random_policy`), the cache of reference scores (`baseline_cache`), and the run directory of a
long job (`rundir`)."""
