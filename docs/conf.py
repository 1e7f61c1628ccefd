"""Sphinx configuration: MyST pages, executed MyST-NB tutorials, an API reference from the docstrings.

Build (what `.ci/docs` runs): `sphinx-build -W --keep-going -b html docs docs/_build/html`.
"""

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
sys.path.insert(0, str(DOCS / "_ext"))

import metadisco  # noqa: E402

project = "metadisco"
author = "the metadisco authors"
copyright = "2026, the metadisco authors"
release = version = metadisco.__version__

extensions = [
    "myst_nb",  # MyST markdown, and the tutorials as MyST notebooks, executed by the build
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx_design",  # the home page's cards
    "repo_pages",  # results/**/README.md as pages, links rewritten and checked
    "registry_docs",  # the registries' entries, the algorithms and the presets, listed from the code
]

exclude_patterns = ["_build", "_ext", "jupyter_execute", "**.ipynb_checkpoints", "screenshots"]
myst_enable_extensions = ["colon_fence", "dollarmath"]
myst_heading_anchors = 3
# The docstrings write code in single backticks, as the README does.
default_role = "literal"

# Tutorials: executed at every build (a broken example breaks the build), each cell's errors fatal.
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_timeout = 900
nb_execution_show_tb = True
nb_merge_streams = True

autosummary_generate = True
autodoc_default_options = {"members": False}
autodoc_typehints = "description"
autodoc_member_order = "bysource"
napoleon_google_docstring = True

html_theme = "sphinx_book_theme"
html_title = "metadisco"
html_theme_options = {
    "show_toc_level": 2,
    "home_page_in_toc": True,
    "use_download_button": False,
}
html_static_path = ["_static"]
html_css_files = ["tables.css"]  # tables wrap inside the text column instead of scrolling sideways
