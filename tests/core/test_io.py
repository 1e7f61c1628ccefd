"""Atomic writes (`metadisco.core.io`): the whole new content or the old file, with the mode a plain `open()` gives."""

import os
import stat

import pytest

from metadisco.core.io import atomic_write_bytes, atomic_write_text


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077, 0o000, 0o027])
def test_written_files_get_the_mode_open_would_give(tmp_path, umask):
    old = os.umask(umask)
    try:
        atomic_write_bytes(tmp_path / "a.bin", b"\x00\x01")
        atomic_write_text(tmp_path / "b.txt", "new")
        with open(tmp_path / "c.txt", "w") as f:  # what the user expects
            f.write("plain")
    finally:
        os.umask(old)
    expected = stat.S_IMODE((tmp_path / "c.txt").stat().st_mode)
    assert expected == 0o666 & ~umask
    for name in ("a.bin", "b.txt"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == expected
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01" and (tmp_path / "b.txt").read_text() == "new"


def test_a_replaced_file_leaves_no_temporary_behind(tmp_path):
    path = tmp_path / "x.json"
    for i in range(5):
        atomic_write_text(path, str(i))
    assert path.read_text() == "4" and sorted(p.name for p in tmp_path.iterdir()) == ["x.json"]
