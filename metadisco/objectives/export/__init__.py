"""`metadisco export`: an objective as plain JAX files with its meta-parameters embedded, needing no metadisco
at run time: a standalone module (`--format jax`) or DiscoBench's OnPolicyRL `loss.py` / `optim.py`
(`--format discobench`). `pieces` writes each piece kind, `formats` the files around them."""

from metadisco.objectives.export.formats import FORMATS, About, export_files
from metadisco.objectives.export.pieces import RENDERERS, Source, render

__all__ = ["FORMATS", "RENDERERS", "About", "Source", "export_files", "render"]
