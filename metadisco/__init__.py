"""metadisco: discover reinforcement-learning objectives by evolution, in JAX."""

__version__ = "0.1.0"
