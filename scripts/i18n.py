"""The Chinese edition of the eight notebooks: gettext catalogs in, notebooks/zh/ out (issue 30).

    python scripts/i18n.py extract [NAME ...]          # make i18n: update the catalogs from the notebooks
    python scripts/i18n.py build [--strict] [NAME ...] # make zh: write notebooks/zh/NN_topic.ipynb
    python scripts/i18n.py check [NAME ...]            # counts; exit 1 naming each cell left to do

NAME is a line of notebooks.txt (default: all eight). One catalog per notebook,
``locale/zh_CN/LC_MESSAGES/NN_topic.po``, read and written with polib: one entry per markdown
cell of the English notebook (empty cells have none), in notebook order; ``msgctxt`` is the
cell's id (nbformat 4.5 ids, which jupytext keeps), ``msgid`` the cell's markdown source
exactly, and the extracted comment (``#.``) names the notebook, the cell, its slide type and
tags. The catalogs are the source of the Chinese; notebooks/zh/ is generated from them.

extract
    A new cell gets an untranslated entry. A changed cell's entry keeps its translation and goes
    fuzzy with the English it translated as the previous msgid (``#| msgid``), as msgmerge does;
    its cell id finds it (difflib, as msgmerge and Babel, only for a cell with a new id). The
    translated entry of a removed cell becomes obsolete (``#~``). A catalog whose entries did not
    change is not rewritten (a file saved by Poedit keeps its wrapping and header).
build
    The English .ipynb with each markdown cell's source replaced by its entry's msgstr; every
    other byte is the English notebook's (code, outputs, execution counts, ids, metadata, tags),
    written with nbformat as the English notebooks are, so the build is reproducible byte for
    byte. Two differences by design: the notebook's metadata gets ``jupytext.formats = "ipynb"``
    (else jupytext.toml's ``notebooks///ipynb`` pairing makes Lab write a py_src/zh/ twin when a
    Chinese notebook is saved), and an entry that is fuzzy, untranslated or out of step with the
    notebook is not used: that cell stays English, as msgfmt leaves fuzzy entries out, with one
    line per notebook saying how many. So `make regen` never stops on a translation, and `make
    test` fails, naming each such cell, until it is translated. ``--strict`` refuses instead:
    one line per such cell, exit 1, nothing written.
check
    Per notebook: entries, translated, fuzzy, untranslated; then one line per cell left to do
    (untranslated, fuzzy, out of step with the notebook), per translation that changes the
    markdown's markup (code, math, links, HTML, headings), per use of a glossary term
    (locale/zh_CN/glossary.md) the translation does not write in the notes' form and per form the
    glossary rules out (scripts/i18n_glossary.py). Exit 1 if any.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import i18n_glossary
import nbformat
import polib

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import i18n_outputs as outputs  # noqa: E402  (it reads lecture_utils.language)
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


# --- the notebooks and their catalogs ---------------------------------------------------------


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


# --- the state of a catalog -------------------------------------------------------------------


@dataclass
class State:
    """One notebook against its catalog: which cells can use their translation, which cannot."""
    name: str
    entries: int = 0
    translated: int = 0
    fuzzy: int = 0
    untranslated: int = 0
    todo: list[str] = field(default_factory=list)  # one line per cell that cannot use a translation
    usable: dict[str, str] = field(default_factory=dict)  # cell id -> msgstr
    pairs: list[tuple[str, polib.POEntry]] = field(default_factory=list)  # (cell id, its entry), in order


def state(root: Path, name: str, nb: nbformat.NotebookNode | None = None) -> State:
    nb = nb if nb is not None else read_notebook(root / "notebooks" / f"{name}.ipynb")
    cells = translatable(nb)
    result = State(name)
    path = catalog_path(root, name)
    rel = path.relative_to(root).as_posix()
    if not path.exists():
        result.todo.append(f"{rel}: missing (run make i18n)")
        result.untranslated = len(cells)
        return result
    po = read_catalog(path)
    entries = active(po)
    result.entries = len(entries)
    result.fuzzy = sum(1 for e in entries if e.fuzzy)
    result.untranslated = sum(1 for e in entries if not e.fuzzy and not e.msgstr)
    result.translated = result.entries - result.fuzzy - result.untranslated
    by_id = {e.msgctxt: e for e in entries}
    for cell in cells:
        entry, here = by_id.get(cell.id), where(name, cell.id, cell.source)
        if entry is None:
            result.todo.append(f"{here}: no entry in {rel} (run make i18n)")
        elif entry.msgid != cell.source:
            result.todo.append(f"{here}: the English changed since the catalog was updated "
                               "(run make i18n, then retranslate the entry)")
        elif entry.fuzzy:
            result.todo.append(f"{here}: fuzzy: the English changed since it was translated "
                               "(retranslate it, then clear the fuzzy flag)")
        elif not entry.msgstr:
            result.todo.append(f"{here}: untranslated")
        else:
            result.usable[cell.id] = entry.msgstr
        if entry is not None:
            result.pairs.append((cell.id, entry))
    ids = {c.id for c in cells}
    result.todo += [f"{rel}: an entry for cell {e.msgctxt}, which notebooks/{name}.ipynb no longer has "
                    "(run make i18n)" if e.msgctxt else f"{rel}, line {e.linenum}: an entry without msgctxt "
                    "(the cell's id; run make i18n)" for e in entries if e.msgctxt not in ids]
    return result


# --- build ------------------------------------------------------------------------------------


def translate(root: Path, name: str) -> tuple[bytes, State]:
    """The Chinese notebook's bytes, and the state it was built from."""
    nb = read_notebook(root / "notebooks" / f"{name}.ipynb")
    found = state(root, name, nb)
    po_files = outputs.catalogs(root, read_catalog)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.id in found.usable:
            cell.source = found.usable[cell.id]
        if cell.metadata.get("caption"):  # a figure's alt text on the site and in the decks
            cell.metadata["caption"] = outputs.caption(po_files, cell.metadata["caption"])
        if cell.cell_type == "code":  # make zh runs the notebook: its outputs are its own (Chinese)
            cell.outputs, cell.execution_count = [], None
    nb.metadata.setdefault("jupytext", {}).update(NO_TWIN)
    return render_notebook(nb), found


def build(root: Path = ROOT, names: list[str] | None = None, out: Path | None = None,
          strict: bool = False) -> tuple[list[State], list[Path]]:
    """Write notebooks/zh/ (or ``out``); ``strict``: write nothing while a cell cannot be translated."""
    out = out if out is not None else root / ZH
    built = [(name, *translate(root, name)) for name in names or notebook_names(root)]
    states = [s for _, _, s in built]
    if strict and any(s.todo for s in states):
        return states, []
    data, _ = outputs.compiled(root, read_catalog)  # what lecture_utils.language reads in notebooks/zh/
    mo = root / outputs.COMPILED
    if outputs.in_use(root) and (not mo.exists() or mo.read_bytes() != data):
        mo.parent.mkdir(parents=True, exist_ok=True)
        write_bytes(mo, data)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, data, _ in built:
        path = out / f"{name}.ipynb"
        if not path.exists() or path.read_bytes() != data:
            write_bytes(path, data)
        written.append(path)
    return states, written


# --- markup a translation must keep -----------------------------------------------------------

FENCE = re.compile(r"^[ \t>]*(`{3,}|~{3,})[^\n]*\n.*?^[ \t>]*\1[ \t]*$", re.M | re.S)
CODE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
MATH = re.compile(r"(?<![\\$])\$\$(.+?)\$\$|(?<![\\$])\$(?![\s$])((?:[^$\\]|\\.)+?)(?<![\s\\])\$(?!\d)", re.S)
URL = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|<(https?://[^>\s]+)>|(?<![(<\w])(https?://[^\s)<>\]]+)")
TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
HEADING = re.compile(r"^(#{1,6})[ \t]", re.M)
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*)")


def _squash(text: str) -> str:
    return " ".join(text.split())


def markup(text: str) -> dict[str, list[str] | Counter]:
    """What a translation keeps: fenced code (in order), code spans, math, link targets and the
    notes' section numbers (in any order), HTML tags and heading levels (in order)."""
    fences = [m.group(0) for m in FENCE.finditer(text)]
    rest = FENCE.sub("\n", text)
    spans = Counter(_squash(m.group(2)) for m in CODE.finditer(rest))
    rest = CODE.sub(" ", rest)
    math = Counter(_squash(m.group(1) or m.group(2)) for m in MATH.finditer(rest))
    rest = MATH.sub(" ", rest)
    urls = Counter(next(g for g in m.groups() if g) for m in URL.finditer(rest))
    return {"fenced code": fences, "code spans": spans, "math": math, "link targets": urls,
            "HTML tags": TAG.findall(rest), "heading levels": [len(h) for h in HEADING.findall(rest)],
            "§ numbers": Counter("§" + n for n in SECTION.findall(rest))}


def markup_problems(english: str, chinese: str) -> list[str]:
    """One phrase per kind of markup the translation does not keep."""
    want, got = markup(english), markup(chinese)
    problems = []
    for kind, expected in want.items():
        found = got[kind]
        if expected == found:
            continue
        if isinstance(expected, Counter):
            lost, added = sorted((expected - found).elements()), sorted((found - expected).elements())
            detail = "; ".join(part for part in (
                "missing " + ", ".join(repr(x) for x in lost) if lost else "",
                "not in the English " + ", ".join(repr(x) for x in added) if added else "") if part)
        elif kind == "fenced code":
            detail = f"{len(expected)} block(s) in the English, {len(found)} here" if len(expected) != len(found) \
                else "a block differs from the English (code stays as it is)"
        else:
            detail = f"{expected} in the English, {found} here"
        problems.append(f"{kind}: {detail}")
    return problems


def prose(text: str) -> str:
    """The text a reader reads as words: no code, math, link targets or HTML tags."""
    text = CODE.sub(" ", FENCE.sub("\n", text))
    return TAG.sub(" ", URL.sub(" ", MATH.sub(" ", text)))


# --- the glossary (scripts/i18n_glossary.py) -------------------------------------------------


def read_glossary(path: Path) -> i18n_glossary.Glossary:
    """The terms of locale/zh_CN/glossary.md and the forms it rules out."""
    try:
        return i18n_glossary.read_glossary(path)
    except ValueError as e:
        raise I18nError(str(e)) from None


def glossary_problems(name: str, pairs: list[tuple[str, polib.POEntry]], terms: i18n_glossary.Glossary) -> list[str]:
    """One line per translated entry that writes a glossary term otherwise than the notes do, or a
    form the glossary rules out."""
    return i18n_glossary.glossary_problems(name, pairs, terms, prose, where)


# --- check ------------------------------------------------------------------------------------


def check(root: Path = ROOT, names: list[str] | None = None) -> tuple[list[State], list[str]]:
    """Every notebook's state, and one line per problem (cells to do, markup, glossary)."""
    glossary = root / GLOSSARY
    terms = read_glossary(glossary) if glossary.exists() else []
    states, problems = [], []
    names = names or notebook_names(root)
    for name in names:
        found = state(root, name)
        states.append(found)
        problems += found.todo
        for cell_id, entry in found.pairs:
            if entry.msgstr and not entry.fuzzy:
                problems += [f"{where(name, cell_id, entry.msgid)}: the translation changes the markup: {p}"
                             for p in markup_problems(entry.msgid, entry.msgstr)]
        problems += glossary_problems(name, found.pairs, terms)
    problems += outputs.problems(root, names, read_catalog)
    folder = root / CATALOGS
    if folder.is_dir():
        problems += [f"{p.relative_to(root).as_posix()}: no such notebook in notebooks.txt"
                     for p in sorted(folder.iterdir()) if p.suffix == ".po" and p.stem not in notebook_names(root)]
    return states, problems


def table(states: list[State]) -> str:
    width = max([len(s.name) for s in states] + [len("total")])
    rows = [f"{'notebook':<{width}}  entries  translated  fuzzy  untranslated"]
    for label, s in [(s.name, s) for s in states] + [("total", State(
            "total", *(sum(getattr(s, k) for s in states) for k in ("entries", "translated", "fuzzy", "untranslated"))))]:
        rows.append(f"{label:<{width}}  {s.entries:>7}  {s.translated:>10}  {s.fuzzy:>5}  {s.untranslated:>12}")
    return "\n".join(rows)


# --- the command line -------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True)
    for command, help_ in (("extract", "update the catalogs from the English notebooks (make i18n)"),
                           ("build", "write notebooks/zh/ from the notebooks and the catalogs (make zh)"),
                           ("check", "counts per notebook; exit 1 naming each cell left to do")):
        sub = commands.add_parser(command, help=help_, description=help_)
        sub.add_argument("names", nargs="*", metavar="NAME", help="a line of notebooks.txt (default: all)")
        if command == "build":
            sub.add_argument("--strict", action="store_true",
                             help="refuse, naming each cell, while an entry is fuzzy or untranslated")
            sub.add_argument("--out", type=Path, help="the folder to write (default: notebooks/zh)")
    args = parser.parse_args(argv)
    root = args.root.resolve()
    known = notebook_names(root)
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"{unknown[0]!r} is not a line of notebooks.txt ({', '.join(known)})")
    try:
        if args.command == "extract":
            for line in outputs.extract(root, args.names or known, read_notebook, read_catalog, new_catalog, dumps,
                                        write_bytes):
                print(line)
            for r in extract(root, args.names):
                found = state(root, r.name)
                print(f"{CATALOGS.as_posix()}/{r.name}.po: "
                      f"{'updated' if r.written else 'unchanged'}; {len(r.new)} new, {len(r.changed)} changed "
                      f"(fuzzy), {len(r.obsolete)} obsolete; {found.translated}/{found.entries} translated, "
                      f"{found.fuzzy} fuzzy, {found.untranslated} untranslated")
            return 0
        if args.command == "build":
            states, written = build(root, args.names, args.out, strict=args.strict)
            if args.strict and not written:
                for line in (line for s in states for line in s.todo):
                    print(line, file=sys.stderr)
                print("zh: nothing written: translate these first (python scripts/i18n.py check)", file=sys.stderr)
                return 1
            for s, path in zip(states, written, strict=True):
                shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
                left = f"; {len(s.todo)} left in English (python scripts/i18n.py check names them)" if s.todo else ""
                print(f"{shown}: {len(s.usable)} markdown cells translated{left}")
            return 0
        states, problems = check(root, args.names)
    except I18nError as e:
        print(f"i18n: {e}", file=sys.stderr)
        return 2
    print(table(states))
    for problem in problems:
        print(problem)
    if problems:
        print(f"check: {len(problems)} to do (CONTRIBUTING.md, \"Translations\")")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
