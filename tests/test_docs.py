"""The README and the documentation site's sources stay within their promises (issue 65): the README short, with
links that resolve; the API page listing every public name; every tutorial in the site's table of contents. The
site itself is built by `.ci/docs` (warnings as errors, tutorials executed)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import metadisco

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
sys.path[:0] = [str(DOCS / "_ext"), str(DOCS)]
from repo_pages import results_page, rewrite_links, site_sources  # noqa: E402


def _prose_lines(text: str) -> list[str]:
    """Lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def test_the_readme_is_short_and_its_prose_lines_and_table_cells_are_too():
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    for line in _prose_lines(text):
        if line.startswith("|"):
            cells = line.strip("|").split(" | ")
            assert max(len(cell) for cell in cells) <= 300, line[:80]
        else:
            assert len(line) <= 120, line[:80]


def test_every_relative_link_of_the_readme_resolves():
    links = re.findall(r"\]\(([^)\s]+)\)", README.read_text())
    local = [link.split("#")[0] for link in links if not re.match(r"^[a-z]+:", link)]
    assert local, "the README links its results"
    missing = [link for link in local if not (ROOT / link).exists()]
    assert not missing


def test_the_api_page_lists_every_public_name():
    page = (DOCS / "api.md").read_text()
    listed = set(re.findall(r"^   (\w+)$", page, re.M)) | set(re.findall(r"\{py:data\} metadisco\.(\w+)", page))
    assert listed == set(metadisco.__all__)


def test_every_tutorial_and_guide_page_is_in_the_table_of_contents():
    index = (DOCS / "index.md").read_text()
    for folder in ("tutorials", "guide"):
        for page in (DOCS / folder).glob("*.md"):
            assert f"{folder}/{page.stem}\n" in index, page


def test_results_links_are_rewritten_to_pages_downloads_or_left_for_the_build_to_name(tmp_path):
    repo = tmp_path
    (repo / "results" / "a" / "figures").mkdir(parents=True)
    (repo / "results" / "a" / "README.md").write_text("# A\n")
    (repo / "results" / "a" / "figures" / "f.png").write_bytes(b"png")
    (repo / "results" / "a" / "summary.md").write_text("# S\n")
    (repo / "results" / "a" / "logs").mkdir()
    (repo / "results" / "b").mkdir()
    (repo / "results" / "b" / "README.md").write_text("# B\n")
    (repo / "experiments").mkdir()
    (repo / "experiments" / "x.yaml").write_text("a: 1\n")
    docs = repo / "docs"
    page = docs / results_page(repo, repo / "results" / "a" / "README.md")
    assert page == docs / "results" / "a.md"
    text = ("[b](../b/) [b2](../b/README.md#part) ![f](figures/f.png) [x](../../experiments/x.yaml) "
            "[web](https://example.org/a) [here](#top) [gone](nothing.txt) [s](summary.md) [logs](logs/)")
    out = rewrite_links(text, repo / "results" / "a", page.parent, repo, docs)
    assert out == ("[b](b.md) [b2](b.md#part) ![f](../../results/a/figures/f.png) [x](../../experiments/x.yaml) "
                   "[web](https://example.org/a) [here](#top) [gone](nothing.txt) [s](a/summary.md) logs")


def test_the_site_check_names_a_missing_image_and_skips_the_web(tmp_path):
    from check_site import broken_links

    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "here.png").write_bytes(b"png")
    (tmp_path / "guide").mkdir()
    (tmp_path / "guide" / "page.html").write_text(
        '<a href="../index.html#top">home</a><img src="../_images/here.png"><img src="../_images/gone.png">'
        '<a href="https://example.org/">web</a><a href="#x">x</a><link href="../_static/gone.css">')
    (tmp_path / "index.html").write_text("<p>home</p>")
    assert broken_links(tmp_path) == ["guide/page.html: ../_images/gone.png", "guide/page.html: ../_static/gone.css"]



def test_every_image_the_site_shows_is_committed():
    """A figure drawn here but never added passes every local check and fails the site build on a fresh clone."""
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:  # an unpacked sdist, not a checkout: nothing to compare with
        return
    tracked = set(listed.stdout.splitlines())
    pages = [p.relative_to(ROOT).as_posix() for p in site_sources(ROOT)]
    pages += [p for p in tracked if p.startswith("docs/") and p.endswith(".md")] + ["README.md"]
    assert len(pages) > 50
    missing = []
    for page in pages:
        for target in re.findall(r"!\[[^\]]*\]\(([^)\s]+)\)", (ROOT / page).read_text()):
            if not re.match(r"^[a-z]+:", target):
                shown = os.path.normpath(os.path.join(os.path.dirname(page), target.split("#")[0]))
                if shown not in tracked:
                    missing.append(f"{page}: {target}")
    assert not missing, missing
