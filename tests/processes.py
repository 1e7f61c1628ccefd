"""What the tests that run the command line in child processes share: their time limit, and a file's line count
(how far a run has got)."""

TIMEOUT = 600  # seconds a child process may take before the test fails


def line_count(path) -> int:
    """Lines in `path` so far (0 before the file exists)."""
    try:
        return len(path.read_text().splitlines())
    except FileNotFoundError:
        return 0
