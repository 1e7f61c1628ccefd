"""Meta-training: the evosax outer loop (config, strategy, loop, checkpoints, devices and hosts)."""
