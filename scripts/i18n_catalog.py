"""The catalogs of the Chinese edition (scripts/i18n.py): one gettext catalog per notebook, read as
strictly as msgfmt --check reads it, written whole or not at all, and brought in step with the English
notebook's markdown cells as msgmerge would (`make i18n`, ``extract``)."""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import polib
from i18n_markup import TAG

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from lecture_utils.files import replace_atomically  # noqa: E402

LOCALE = "zh_CN"
CATALOGS = Path("locale") / LOCALE / "LC_MESSAGES"
GLOSSARY = Path("locale") / LOCALE / "glossary.md"
ZH = Path("notebooks") / "zh"
HEADER = ("Chinese ({locale}) translation of notebooks/{name}.ipynb: one entry per markdown cell, in\n"
          "notebook order, msgctxt = the cell's id. `make i18n` updates it from the English notebook,\n"
          "`make zh` writes notebooks/zh/{name}.ipynb from it (CONTRIBUTING.md, \"Translations\").\n"
          "Translate the prose; keep code spans, fenced code, math, link targets and HTML tags as they are.")
NO_TWIN = {"formats": "ipynb"}  # the Chinese notebooks' jupytext metadata: no paired .py


class I18nError(Exception):
    """A catalog, notebook or glossary that cannot be read: one line naming the file."""


def notebook_names(root: Path = ROOT) -> list[str]:
    """The eight, named exactly in notebooks.txt (never a pattern a Lab copy would match)."""
    return (root / "notebooks.txt").read_text(encoding="utf-8").split()


def read_notebook(path: Path) -> nbformat.NotebookNode:
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError) as e:
        raise I18nError(f"{path}: cannot read the notebook ({e})") from None


def render_notebook(nb: nbformat.NotebookNode) -> bytes:
    """The bytes nbformat.write writes (what nbconvert, jupytext and Lab write the English with)."""
    text = nbformat.writes(nb)
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def translatable(nb: nbformat.NotebookNode) -> list:
    """The markdown cells that get an entry: all but the empty ones."""
    return [c for c in nb.cells if c.cell_type == "markdown" and c.source.strip()]


def where(name: str, cell_id: str, source: str = "") -> str:
    """How a message names a cell: the notebook, the id and the cell's first line."""
    first = next((text for line in source.splitlines() if (text := TAG.sub("", line).strip())), "")
    first = first if len(first) <= 50 else first[:49] + "…"
    return f"notebooks/{name}.ipynb, cell {cell_id}" + (f' ("{first}")' if first else "")


def extracted_comment(name: str, cell) -> str:
    meta = cell.metadata
    parts = [f"notebooks/{name}.ipynb, cell {cell.id}"]
    slide = meta.get("slideshow", {}).get("slide_type")
    if slide:
        parts.append(f"slide: {slide}" + (" (speaker notes)" if slide == "notes" else ""))
    if meta.get("tags"):
        parts.append("tags: " + ", ".join(meta["tags"]))
    return "; ".join(parts)


def catalog_path(root: Path, name: str) -> Path:
    return root / CATALOGS / f"{name}.po"


# A line as msgfmt reads it: blank, a comment, or [#~ | #| | #~| ][keyword ]"a C string" (msgfmt's escapes only).
PO_LINE = re.compile(r'|#(?![~|]).*|(#~\|?|#\|)? *((msgctxt|msgid(_plural)?|msgstr(\[\d+\])?)[ \t]+)?'
                     r'"([^"\\]|\\([ntbrfva\\"]|[0-7]{1,3}|x[0-9A-Fa-f]+))*"[ \t]*')


def read_catalog(path: Path) -> polib.POFile:
    """The catalog, refused (one line naming the line) where msgfmt --check would refuse it: polib reads a
    string without its closing quote by dropping the line's last character, and keeps duplicates."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        bad = next((n for n, line in enumerate(lines, 1) if not PO_LINE.fullmatch(line.strip())), None)
        po = polib.pofile(str(path), wrapwidth=0, encoding="utf-8") if bad is None else None
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise I18nError(f"{path}: cannot read the catalog: {str(e).replace(f' {path}', '')}") from None
    if bad is not None:
        why = "end-of-line within string" if re.sub(r"\\.", "", lines[bad - 1]).count('"') % 2 else "syntax error"
        raise I18nError(f"{path}: cannot read the catalog: line {bad}: {why} (as msgfmt --check says); nothing was written")
    seen = set()
    for entry in (e for e in po if not e.obsolete):
        if (entry.msgctxt, entry.msgid) in seen:
            raise I18nError(f"{path}: cannot read the catalog: line {entry.linenum}: duplicate message definition "
                            "(as msgfmt --check says); nothing was written")
        seen.add((entry.msgctxt, entry.msgid))
    return po


def new_catalog(name: str) -> polib.POFile:
    po = polib.POFile(wrapwidth=0, encoding="utf-8")
    po.header = HEADER.format(locale=LOCALE, name=name)
    po.metadata = {
        "Project-Id-Version": f"pytorch-resource-accounting {name}",
        "PO-Revision-Date": "YEAR-MO-DA HO:MI+ZONE",  # gettext's initial values: the translator's tool fills
        "Last-Translator": "FULL NAME <EMAIL@ADDRESS>",  # them in on the first save
        "Language-Team": f"Chinese ({LOCALE})",
        "Language": LOCALE,
        "MIME-Version": "1.0",
        "Content-Type": "text/plain; charset=UTF-8",
        "Content-Transfer-Encoding": "8bit",
        "Plural-Forms": "nplurals=1; plural=0;",
    }
    return po


def write_bytes(path: Path, data: bytes) -> None:
    """Whole or not at all: a catalog holds a translator's work."""
    replace_atomically(path, lambda f: f.write(data))


def dumps(po: polib.POFile) -> str:
    po.wrapwidth = 0  # one PO line per markdown line
    text = str(po)
    return text if text.endswith("\n") else text + "\n"


def active(po: polib.POFile) -> list[polib.POEntry]:
    return [e for e in po if not e.obsolete and e.msgid]


# --- extract ----------------------------------------------------------------------------------


@dataclass
class Merged:
    name: str
    new: list[str] = field(default_factory=list)      # cell ids with a new, untranslated entry
    changed: list[str] = field(default_factory=list)  # cell ids whose translation went fuzzy
    obsolete: list[str] = field(default_factory=list)  # cell ids whose translated entry went obsolete
    written: bool = False


def _previous(entry: polib.POEntry) -> str:
    """The English a translation translates: the previous msgid of a fuzzy entry, else its msgid."""
    return entry.previous_msgid if entry.fuzzy and entry.previous_msgid else entry.msgid


def merge(po: polib.POFile, name: str, cells: list) -> Merged:
    """Bring ``po``'s entries in step with ``cells`` (in place), as msgmerge would."""
    report = Merged(name)
    old = active(po)
    exact = {(e.msgctxt, e.msgid): e for e in po if e.obsolete} | {(e.msgctxt, e.msgid): e for e in old}
    by_id = {e.msgctxt: e for e in old}
    ids = {c.id for c in cells}
    memory = [e for e in old if e.msgctxt not in ids and e.msgstr] + [e for e in po if e.obsolete and e.msgstr]
    used: set[int] = set()
    entries = []
    for cell in cells:
        comment = extracted_comment(name, cell)
        entry = exact.get((cell.id, cell.source))
        if entry is not None:  # unchanged (or back): keep translation, flags, previous msgid, notes
            entry.comment, entry.obsolete = comment, False
            used.add(id(entry))
            entries.append(entry)
            continue
        fresh = polib.POEntry(msgctxt=cell.id, msgid=cell.source, msgstr="", comment=comment)
        source = by_id.get(cell.id)
        if source is None or not source.msgstr:  # a cell with a new id: the closest old translation
            candidates = {e.msgid.lower().strip(): e for e in memory if id(e) not in used}
            match = difflib.get_close_matches(cell.source.lower().strip(), list(candidates), 1)
            source = candidates[match[0]] if match else None
        if source is not None and source.msgstr:
            used.add(id(source))
            fresh.msgstr, fresh.tcomment = source.msgstr, source.tcomment
            fresh.flags, fresh.previous_msgid = ["fuzzy"], _previous(source)
            report.changed.append(cell.id)
        else:
            report.new.append(cell.id)
        entries.append(fresh)
    gone = [e for e in old if id(e) not in used and e.msgstr]
    report.obsolete = [e.msgctxt for e in gone]
    obsolete: dict[tuple, polib.POEntry] = {}
    for entry in gone + [e for e in po if e.obsolete and id(e) not in used]:
        entry.obsolete, entry.previous_msgid, entry.previous_msgctxt = True, None, None
        obsolete.setdefault((entry.msgctxt, entry.msgid), entry)
    keys = {(e.msgctxt, e.msgid) for e in entries}
    po[:] = entries + [e for key, e in obsolete.items() if key not in keys]
    return report


def extract(root: Path = ROOT, names: list[str] | None = None) -> list[Merged]:
    """Update (or create) each notebook's catalog; write only the catalogs that changed."""
    reports = []
    for name in names or notebook_names(root):
        cells = translatable(read_notebook(root / "notebooks" / f"{name}.ipynb"))
        path = catalog_path(root, name)
        po = read_catalog(path) if path.exists() else new_catalog(name)
        before = dumps(po) if path.exists() else None
        report = merge(po, name, cells)
        after = dumps(po)
        if after != before:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(path, after.encode("utf-8"))
            report.written = True
        reports.append(report)
    return reports
