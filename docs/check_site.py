"""Every local link and image of the built site points at a file that is there (run by .ci/docs after the build).

Sphinx's own warnings cover the sources' links and cross-references; this reads what it wrote, so a figure that a
results page shows, a tutorial's plotted output, a download or a theme asset that did not reach the site is named
here. Links to the web are skipped (CI's machine reaches only the package index).

    python docs/check_site.py docs/_build/html
"""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found: list[tuple[str, str]] = []

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value and (name == "src" or (name == "href" and tag in ("a", "link"))):
                self.found.append((tag, value))


def broken_links(site: Path) -> list[str]:
    """'page: target' for each local link or image of `site`'s pages whose file is missing."""
    problems = []
    pages = sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)  # not templates
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text(errors="replace"))
        for _tag, value in parser.found:
            parts = urlsplit(value)
            if parts.scheme or parts.netloc or not parts.path or value.startswith("#"):
                continue  # the web, data: URIs, and anchors within the page
            target = (page.parent / unquote(parts.path)).resolve()
            if not target.exists():
                problems.append(f"{page.relative_to(site)}: {value}")
    return problems


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: python docs/check_site.py BUILT_HTML_DIR", file=sys.stderr)
        return 2
    site = Path(argv[0])
    pages = len([p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts])
    problems = broken_links(site)
    for problem in problems:
        print(f"missing: {problem}", file=sys.stderr)
    images = len(list((site / "_images").glob("*"))) if (site / "_images").is_dir() else 0
    print(f"site check: {pages} pages, {images} images, {len(problems)} broken local links")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
