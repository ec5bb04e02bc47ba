"""Extract the English corpus in data/corpus/ from two Debian packages (public domain).

    apt-get install dict-jargon dict-devil   # `make corpus` does both steps
    python scripts/extract_corpus.py

dictd's .dict.dz files are dictzip, a gzip variant. The text is kept exactly as the
packages ship it, including the public-domain notice each one begins with.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

SOURCES = {
    "jargon.txt": "/usr/share/dictd/jargon.dict.dz",  # The Jargon File 4.4.7 (dict-jargon)
    "devil.txt": "/usr/share/dictd/devil.dict.dz",  # Bierce, The Devil's Dictionary (dict-devil)
}
OUT = Path(__file__).resolve().parents[1] / "data" / "corpus"


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, source in SOURCES.items():
        if not Path(source).exists():
            print(f"{source} missing: apt-get install dict-jargon dict-devil", file=sys.stderr)
            return 1
        text = gzip.open(source).read().decode("utf-8")
        (OUT / name).write_text(text, encoding="utf-8")
        print(f"{OUT / name}: {len(text.encode()):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
