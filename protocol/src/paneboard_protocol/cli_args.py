"""The argument parser every `paneboard` subcommand uses.

The CLI's contract (README, docs/collector.md) is that a command's errors are one clear line on stderr and a
non-zero exit; argparse's default prints a usage block first. This lives in the
protocol package because it is the one every other distribution already depends on.
"""

from __future__ import annotations

import argparse
import difflib
from typing import Any, NoReturn


class OneLineParser(argparse.ArgumentParser):
    """argparse that fails with `PROG: message` on one line and exit status 2.

    `help_hint` appends "(try `PROG --help`)", as the protocol tools do.
    """

    def __init__(self, *args: Any, help_hint: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.help_hint = help_hint

    def _parse_known_args(self, arg_strings: list[str], *rest: Any) -> Any:
        self._given = list(arg_strings)  # what was typed, for `did_you_mean`
        return super()._parse_known_args(arg_strings, *rest)

    def long_options(self) -> set[str]:
        """Every --option this parser and its subcommands' parsers know."""
        out = {o for o in self._option_string_actions if o.startswith("--")}
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    if isinstance(sub, OneLineParser):  # add_subparsers makes its own class
                        out |= sub.long_options()
        return out

    def did_you_mean(self) -> str:
        """The hint "; did you mean --server?" for each mistyped --option given (Python
        3.11's argparse has no suggest_on_error); "" when nothing is close."""
        known = self.long_options()
        hints = []
        for arg in getattr(self, "_given", []):
            if arg == "--":
                break
            opt = arg.split("=", 1)[0]
            if not opt.startswith("--") or opt in known or any(k.startswith(opt) for k in known):
                continue  # a known option, an unambiguous abbreviation of one, or not an option
            close = difflib.get_close_matches(opt, sorted(known), n=1, cutoff=0.75)
            if close:
                hints.append(f"{opt}: did you mean {close[0]}?")
        return "".join(f"; {h}" for h in hints)

    def error(self, message: str) -> NoReturn:
        hint = f" (try `{self.prog} --help`)" if self.help_hint else ""
        self.exit(2, f"{self.prog}: {message}{self.did_you_mean()}{hint}\n")
