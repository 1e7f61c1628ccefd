"""The one exception type for user mistakes, and the one warning type for users.

The command line turns a ``UserError`` into a one-line message and exit status 2 (anything else is a bug and
keeps its traceback), and a ``MetadiscoWarning`` into a one-line warning.
"""

import difflib
from typing import Any

ECHO_CHARS = 60  # characters of a bad value shown in an error message


def shorten(value: Any, limit: int = ECHO_CHARS) -> str:
    """`repr(value)`, cut to `limit` characters with the full length said, on one line."""
    try:
        text = repr(value)
    except ValueError:  # Python refuses to print ints of more than 4300 digits
        text = f"<an integer of {int(value.bit_length() * 0.30103) + 1:,} digits>"
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


class UserError(ValueError):
    """Bad input from the user: an unknown name, a value out of range, a missing or damaged file."""


class SettingError(UserError):
    """A `UserError` about settings, named in its text as the library calls them (a parameter or a config key:
    `num_seeds must be a positive integer, got 0`), which is what a Python caller typed. The command line, whose
    user typed flags, names its flag instead (`for_flags`: `--seeds must be a positive integer, got 0`)."""

    def __init__(self, message: str, settings: tuple[str, ...]):
        super().__init__(message)
        self.settings = tuple(settings)

    def for_flags(self, flags: dict[str, str]) -> str:
        """The message with each of its settings that `flags` maps ({setting: flag}) named by its flag; a whole
        word only, so `envs` is not replaced inside `held_out_envs`, and never inside a quoted value (a path
        'runs/out' stays as the user gave it)."""
        import re

        # Quoted values (as `shorten` and repr print them) alternate with the words between them; an apostrophe
        # inside a word ("doesn't") opens no quote.
        parts = re.split(r"""((?<!\w)'[^']*'(?!\w)|(?<!\w)"[^"]*"(?!\w))""", str(self))
        for name in self.settings:
            if name in flags:
                word = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-])")
                parts = [part if i % 2 else word.sub(lambda _, f=flags[name]: f, part) for i, part in enumerate(parts)]
        return "".join(parts)


class DiskFullError(UserError):
    """A write the file system refused for want of space (ENOSPC, or a quota: EDQUOT). The atomic writers leave
    the file as it was, so a run stopped by it keeps its last checkpoint (`metadisco.core.io.os_error`)."""


def unknown_name_error(kind: str, name: str, known: list[str] | tuple[str, ...]) -> UserError:
    """An error for an unknown `name` of `kind` that lists the closest known names (or all, if few)."""
    # A name far longer than any known one cannot be a typo of one (and matching it would take long).
    close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.5) if len(name) <= 200 else []
    if close:
        hint = f"did you mean {', '.join(repr(c) for c in close)}?"
    elif len(known) <= 12:
        hint = f"known: {', '.join(sorted(known))}"
    else:
        hint = "run `metadisco envs` to list them" if kind == "env" else f"known: {', '.join(sorted(known))}"
    return UserError(f"unknown {kind} {shorten(name)}; {hint}")


class MetadiscoWarning(UserWarning):
    """Something the user should know that does not stop the work (the command line prints it as one line)."""
