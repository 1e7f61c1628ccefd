"""Layer 8 (with `cli`): throughput benchmarks of metadisco (`train`, `meta`) and against peers (`peers`;
rejax's trainers at the same settings in `rejax`)."""
