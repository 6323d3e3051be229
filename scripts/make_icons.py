"""Draw the dashboard's app icons (PNG) with Pillow; the PNGs are committed.

Why a script and not hand-made files: the icons stay reproducible and in step with
the favicon the page draws at run time (same board-with-stripes motif). Run:
`uv run python scripts/make_icons.py`.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw

OUT = Path(__file__).resolve().parent.parent / "web" / "icons"
BG = (31, 41, 55, 255)
STRIPE = (156, 163, 175, 255)
DOT = (234, 88, 12, 255)


def board_icon(size: int, *, maskable: bool = False) -> Image.Image:
    """The board motif; a maskable icon keeps everything inside the 80 % safe zone."""
    img = Image.new("RGBA", (size, size), BG if maskable else (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    pad = int(size * 0.1) if maskable else 0
    inner = size - 2 * pad
    if not maskable:
        d.rounded_rectangle((0, 0, size - 1, size - 1), radius=size // 6, fill=BG)
    x0, x1 = pad + inner * 0.16, pad + inner * 0.84
    for i in range(3):
        y = pad + inner * (0.2 + i * 0.22)
        d.rounded_rectangle((x0, y, x1, y + inner * 0.13), radius=inner // 40, fill=STRIPE)
    r = inner * 0.17
    cx, cy = pad + inner * 0.74, pad + inner * 0.74
    d.ellipse((cx - r, cy - r, cx + r, cy + r), fill=DOT)
    return img


def badge(size: int) -> Image.Image:
    """Android's status-bar badge: white on transparent, shape only."""
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    for i in range(3):
        y = size * (0.2 + i * 0.24)
        d.rounded_rectangle((size * 0.15, y, size * 0.85, y + size * 0.14), radius=size // 20, fill="white")
    return img


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    board_icon(192).save(OUT / "icon-192.png", optimize=True)
    board_icon(512).save(OUT / "icon-512.png", optimize=True)
    board_icon(512, maskable=True).save(OUT / "maskable-512.png", optimize=True)
    badge(72).save(OUT / "badge-72.png", optimize=True)
    print(f"icons written to {OUT}")


if __name__ == "__main__":
    main()
