"""The argument parser every `paneboard` subcommand uses.

The design's contract is that a command's errors are one clear line on stderr and a
non-zero exit; argparse's default prints a usage block first. This lives in the
protocol package because it is the one every other distribution already depends on.
"""

from __future__ import annotations

import argparse
from typing import Any, NoReturn


class OneLineParser(argparse.ArgumentParser):
    """argparse that fails with `PROG: message` on one line and exit status 2.

    `help_hint` appends "(try `PROG --help`)", as the protocol tools do.
    """

    def __init__(self, *args: Any, help_hint: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help_hint = help_hint

    def error(self, message: str) -> NoReturn:
        hint = f" (try `{self.prog} --help`)" if self.help_hint else ""
        self.exit(2, f"{self.prog}: {message}{hint}\n")
