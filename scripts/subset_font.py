"""Write the Chinese font the figures of notebooks/zh/ draw with: lecture_utils/fonts/NotoSansSC-lecture.otf.

    python scripts/subset_font.py [--source /usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc]

A subset of Noto Sans CJK SC (SIL Open Font License 1.1; the licence ships beside it): the 3,755
characters of GB 2312's first level, which hold nearly all of modern Chinese text, CJK
punctuation, and every other character the output catalogs' translations use. The figures keep
their Latin letters and digits in matplotlib's DejaVu Sans and fall back to this font for the rest
(lecture_utils/language.py), so a fresh machine draws Chinese with no missing-glyph boxes. The
source font is Debian's fonts-noto-cjk (``apt-get install fonts-noto-cjk``); run this again when a
translation uses a character the font lacks (tests/test_zh_english.py names it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import polib
from fontTools import subset
from fontTools.ttLib import TTCollection

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lecture_utils.language import FONT  # noqa: E402

SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
FAMILY = "Noto Sans SC Lecture"  # a subset is a modified font: it gets a name of its own
OUTPUT = ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "output"


def gb2312_level_one() -> str:
    return "".join(bytes([hi, lo]).decode("gb2312") for hi in range(0xB0, 0xD8) for lo in range(0xA1, 0xFF)
                   if (hi, lo) < (0xD7, 0xFA))


def wanted() -> str:
    """Every non-ASCII character the figures may draw: GB 2312 level 1, CJK punctuation, the catalogs'."""
    used = {ch for path in OUTPUT.glob("*.po") for entry in polib.pofile(str(path)) for ch in entry.msgstr}
    punctuation = "，。、；：？！（）「」『』《》【】—…·×→←≈≤≥±－～％＋＝"
    return "".join(sorted({ch for ch in gb2312_level_one() + punctuation} | {ch for ch in used if ord(ch) > 127}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE, help="Noto Sans CJK (a .ttc or the SC .otf)")
    args = parser.parse_args(argv)
    if not args.source.is_file():
        parser.error(f"{args.source} not found: apt-get install fonts-noto-cjk (Debian/Ubuntu), or pass --source")
    fonts = TTCollection(str(args.source)).fonts if args.source.suffix == ".ttc" else None
    font = next(f for f in fonts if f["name"].getDebugName(1) == "Noto Sans CJK SC") if fonts else None
    if font is None:
        from fontTools.ttLib import TTFont

        font = TTFont(str(args.source))
    options = subset.Options()
    options.name_IDs, options.layout_features = ["*"], []  # keep the copyright and licence records
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=wanted())
    subsetter.subset(font)
    for record in font["name"].names:
        if record.nameID in (1, 3, 4, 16):
            record.string = FAMILY
        elif record.nameID == 6:
            record.string = FAMILY.replace(" ", "")
    FONT.parent.mkdir(parents=True, exist_ok=True)
    font.save(str(FONT))
    print(f"{FONT.relative_to(ROOT)}: {len(font.getGlyphOrder()):,} glyphs, {FONT.stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
