"""Layer 6 (a sibling of `meta` and `evaluate`, which it never imports): searches over trainer settings,
`sweep` (grid / random) and `pbt` (population-based training)."""
