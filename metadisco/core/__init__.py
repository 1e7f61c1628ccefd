"""Layer 1, the foundation every other layer stands on: errors, input coercion, the schema engine, safe YAML,
atomic io, checkpoints, the run-directory lock, limits, plugins and statistics. Imports nothing of metadisco."""
