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

Reading, writing and merging the catalogs: scripts/i18n_catalog.py; the markup a translation keeps
and the prose between it: scripts/i18n_markup.py; what the code prints and draws: scripts/i18n_outputs.py.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import i18n_glossary
import nbformat
import polib
from i18n_catalog import (
    CATALOGS,
    GLOSSARY,
    NO_TWIN,
    ROOT,
    ZH,
    I18nError,
    active,
    catalog_path,
    dumps,
    extract,
    new_catalog,
    notebook_names,
    read_catalog,
    read_notebook,
    render_notebook,
    translatable,
    where,
    write_bytes,
)
from i18n_markup import markup_problems, prose

sys.path.insert(0, str(ROOT))  # i18n_outputs reads lecture_utils.language: the checkout's
import i18n_outputs as outputs  # noqa: E402

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
    # RISE asks for rise.css and NN_topic.css beside the notebook it presents: the same styles
    for css in ["rise.css", *(f"{name}.css" for name, _, _ in built)]:
        source, copy = root / "notebooks" / css, out / css
        if source.is_file() and (not copy.exists() or copy.read_bytes() != source.read_bytes()):
            write_bytes(copy, source.read_bytes())
    return states, written


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
