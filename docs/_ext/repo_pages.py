"""Sphinx extension: the repository's results READMEs as pages of the site, their links kept working.

Each `results/**/README.md` becomes `docs/results/<folder>.md` when the build starts (generated, not committed:
the README beside the data stays the one copy). Relative links are rewritten for the page's new place:

- a link to a results folder or its README goes to that folder's page, and a link to another markdown file under
  `results/` to that file's page (written too);
- a link to a folder without a README becomes its text: there is no page to serve;
- a link to any other file of the repository stays a link to that file, which Sphinx then serves as a download
  (an image is copied into the site);
- a link whose target does not exist is left as written, so MyST's `xref_missing` warning names it and the
  build, run with warnings as errors, fails. That is the site's link check for everything on disk.

`rewrite_links` is also what turned README sections into the guide's pages, so both follow one rule.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

# [text](target) and ![alt](target); the target has no spaces (every link in this repository's markdown).
_LINK = re.compile(r"(!?\[[^\]]*\]\()([^)\s]+)(\))")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def results_page(repo: Path, markdown: Path) -> Path | None:
    """The page path, relative to `docs/`, that a markdown file under `results/` becomes: a folder's README is
    `results/<folder>.md`, any other file `results/<folder>/<name>.md` (None: not a markdown file under results/)."""
    try:
        rel = markdown.parent.relative_to(repo / "results")
    except ValueError:
        return None
    if markdown.suffix != ".md" or rel == Path("."):
        return None
    if markdown.name != "README.md":
        return Path("results") / rel / markdown.name
    return Path("results") / f"{rel}.md"


def rewrite_links(text: str, source_dir: Path, page_dir: Path, repo: Path, docs: Path) -> str:
    """`text`'s relative links, written from `source_dir`, rewritten to work from `page_dir` (both absolute)."""

    def target_for(match: re.Match) -> str:
        head, target, tail = match.groups()
        if target.startswith("#") or _SCHEME.match(target):
            return match.group(0)
        path, _, anchor = target.partition("#")
        absolute = (source_dir / path).resolve()
        if absolute.is_dir() and (absolute / "README.md").is_file():
            absolute = absolute / "README.md"
        if not absolute.exists():
            return match.group(0)
        if absolute.is_dir():
            return head[head.index("[") + 1:-2]
        page = results_page(repo, absolute)
        if page is not None:
            absolute = docs / page
        elif absolute.is_relative_to(docs):
            pass
        else:
            anchor = ""  # a download has no anchors
        new = os.path.relpath(absolute, page_dir)
        return f"{head}{new}{'#' + anchor if anchor else ''}{tail}"

    return _LINK.sub(target_for, text)


def _headings_from(level: int, text: str) -> str:
    """`text` with its headings shifted so that the highest is at `level` (fenced code left alone)."""
    lines, fenced, levels = text.splitlines(keepends=True), False, []
    for line in lines:
        fenced ^= line.startswith("```")
        if not fenced and (m := re.match(r"^(#+) ", line)):
            levels.append(len(m.group(1)))
    shift = level - min(levels) if levels else 0
    out, fenced = [], False
    for line in lines:
        fenced ^= line.startswith("```")
        if not fenced and re.match(r"^#+ ", line):
            line = "#" * max(1, line.index(" ") + shift) + line[line.index(" "):]
        out.append(line)
    return "".join(out)


def site_sources(repo: Path) -> list[Path]:
    """The markdown files under `results/` that the site shows: every results README, then each other markdown
    file that one of them links."""
    sources = [p for p in sorted((repo / "results").rglob("README.md")) if results_page(repo, p) is not None]
    linked = set()
    for readme in sources:
        for target in _LINK.findall(readme.read_text()):
            path = (readme.parent / target[1].partition("#")[0]).resolve()
            if path.suffix == ".md" and path.name != "README.md" and path.is_file():
                linked.add(path)
    return sources + sorted(p for p in linked if results_page(repo, p) is not None)


def write_results_pages(repo: Path, docs: Path) -> list[Path]:
    """Write the page of each of `site_sources` under `docs/results/`; returns the pages written (relative to
    docs)."""
    written = []
    for source in site_sources(repo):
        page = results_page(repo, source)
        out = docs / page
        out.parent.mkdir(parents=True, exist_ok=True)
        text = rewrite_links(source.read_text(), source.parent, out.parent, repo, docs)
        if source.name != "README.md":  # a script's output: titled by its path, its headings below the title
            text = f"# {source.relative_to(repo)}\n\n" + _headings_from(2, text)
        if not out.exists() or out.read_text() != text:  # unchanged pages keep their time: no needless rebuild
            out.write_text(text)
        written.append(page)
    return written


def _builder_inited(app) -> None:
    docs = Path(app.srcdir)
    write_results_pages(docs.parent, docs)


def setup(app):
    app.connect("builder-inited", _builder_inited)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
