"""Relative links in the Markdown pages and the anchors they point at, as GitHub renders them.

Pure functions over text, so the test can check both the real pages and small
made-up ones that must fail.
"""

from __future__ import annotations

import re
from pathlib import Path

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_HREF = re.compile(r"""<a\s[^>]*href=["']([^"']+)["']""", re.I)
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
_ID = re.compile(r"""<a\s[^>]*(?:id|name)=["']([^"']+)["']""", re.I)
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
# A page named in prose or as code (`protocols.md`, docs/wire.md#hello) rather than linked.
_NAMED = re.compile(r"(?<![\w/.<-])((?:\.{1,2}/)*[\w.-]+(?:/[\w.-]+)*\.md)(?:#([\w-]+))?(?![\w/])")


def strip_code(text: str) -> str:
    """Text without fenced blocks and code spans: a link written as code is not a link."""
    return _CODE_SPAN.sub("", _FENCE.sub("", text))


def links(text: str) -> list[str]:
    body = strip_code(text)
    return _LINK.findall(body) + _HREF.findall(body)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: rendered text, lower-cased, punctuation dropped, spaces to '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link counts by its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every fragment a link into this page may use: heading slugs (with GitHub's -1, -2 for
    repeats) and explicit `<a id>` / `<a name>` anchors."""
    out: set[str] = set()
    counts: dict[str, int] = {}
    for _, title in _HEADING.findall(_FENCE.sub("", text)):
        base = slug(title)
        n = counts.get(base, 0)
        counts[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    out.update(_ID.findall(text))
    return out


def named_pages(text: str) -> list[tuple[str, str]]:
    """(path, fragment) of every Markdown page a text names without linking it."""
    body = _URL.sub("", _LINK.sub("", _FENCE.sub("", text)))
    return _NAMED.findall(body)


def broken_names(page: Path, root: Path, outside: frozenset[str] = frozenset()) -> list[str]:
    """Each page `page` names (in prose or code) that exists neither beside it nor from the
    repository root, or whose fragment is not one of its anchors. `outside` lists names
    that are meant to be outside the repository."""
    problems = []
    for name, fragment in named_pages(page.read_text(encoding="utf-8")):
        if name in outside:
            continue
        found = [p for p in ((page.parent / name).resolve(), (root / name).resolve()) if p.is_file()]
        if not found:
            problems.append(f"{page.name}: names {name}, which is not in the repository")
        elif fragment and fragment not in anchors(found[0].read_text(encoding="utf-8")):
            problems.append(f"{page.name}: names {name}#{fragment}: no such anchor")
    return problems


def broken_links(page: Path) -> list[str]:
    """Each relative link of `page` whose file, or anchor in a Markdown file, does not exist."""
    problems = []
    for target in links(page.read_text(encoding="utf-8")):
        if _SCHEME.match(target) or target.startswith("//"):
            continue  # absolute URLs are not checked offline
        path_part, _, fragment = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            problems.append(f"{page.name}: {target}: no such file")
            continue
        if fragment:
            if dest.suffix != ".md" or dest.is_dir():
                problems.append(f"{page.name}: {target}: anchor into a file that is not Markdown")
            elif fragment not in anchors(dest.read_text(encoding="utf-8")):
                problems.append(f"{page.name}: {target}: no anchor #{fragment} in {dest.name}")
    return problems
