"""Does any table of the built site scroll sideways? Each page of `docs/_build/html` opened in headless Chromium at
a 1280-pixel window, every table's width compared with the article's (not in CI: it needs Chromium, Debian's
`chromium` package).

    python docs/check_tables.py docs/_build/html     # one line per page with a table wider than the text; exit 1
"""

from __future__ import annotations

import functools
import html
import http.server
import json
import shutil
import subprocess
import sys
import threading
from pathlib import Path

MEASURE = """<html><body><pre id="out">running</pre><script>
const pages = %s; const out = []; let i = 0;
function next() {
  if (i >= pages.length) { document.getElementById('out').textContent = 'RESULT' + JSON.stringify(out); return; }
  const f = document.createElement('iframe'); f.style.width = '1280px'; f.style.height = '900px';
  f.onload = () => {
    const d = f.contentDocument; const article = d.querySelector('.bd-article') || d.body;
    const wide = [...d.querySelectorAll('table')].filter(t => t.scrollWidth > article.clientWidth + 2).length;
    const scrolling = [...d.querySelectorAll('.pst-scrollable-table-container, .table-wrapper')]
      .filter(c => c.scrollWidth > c.clientWidth + 2).length;
    out.push([pages[i], d.querySelectorAll('table').length, wide, scrolling]);
    f.remove(); i++; next(); };
  f.src = pages[i]; document.body.appendChild(f);
}
next();
</script></body></html>"""


def pages_of(site: Path) -> list[str]:
    skip = ("_autosummary", "_modules", "_sources", "genindex", "search", "_measure")
    return sorted(str(p.relative_to(site)) for p in site.rglob("*.html") if not any(s in str(p) for s in skip))


def measure(site: Path, browser: str) -> list[list]:
    pages = pages_of(site)
    (site / "_measure.html").write_text(MEASURE % json.dumps(pages))
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        dom = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000",
                              "--virtual-time-budget=300000", "--dump-dom",
                              f"http://127.0.0.1:{server.server_address[1]}/_measure.html"],
                             capture_output=True, text=True, timeout=900).stdout
    finally:
        server.shutdown()
        (site / "_measure.html").unlink()
    text = html.unescape(dom.split("RESULT", 1)[1].split("</pre>", 1)[0])
    return json.loads(text)


def main(argv: list[str]) -> int:
    site = Path(argv[0] if argv else "docs/_build/html")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None or not (site / "index.html").exists():
        print("needs Chromium (Debian's chromium) and a built site (bash .ci/docs)", file=sys.stderr)
        return 2
    rows = measure(site, browser)
    bad = [row for row in rows if row[2] or row[3]]
    for page, tables, wide, scrolling in bad:
        print(f"{page}: {wide} of {tables} tables wider than the text, {scrolling} scrolling sideways")
    print(f"{len(rows)} pages, {sum(r[1] for r in rows)} tables: {len(bad)} pages with a table that scrolls sideways")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
