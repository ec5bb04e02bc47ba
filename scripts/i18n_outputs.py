"""The catalogs of what the code prints and draws (lecture_utils/language.py reads them compiled).

    python scripts/i18n.py extract   # also updates locale/zh_CN/LC_MESSAGES/output/*.po
    python scripts/i18n.py build     # also compiles them into lecture_utils/locale/.../lecture_utils.mo

``output/NN_topic.po`` holds the strings a notebook's code cells show a reader: the labels of
``check``, ``measured`` and ``check_answer``, what ``print`` prints, a GPU-only cell's ``what``,
a progress bar's ``desc``, and figure text (titles, axis labels, legend labels, ``text``,
bar labels); an f-string is a template whose placeholders (``{dt}``) the translation keeps. A
figure's caption (its alt text) gets an entry with ``msgctxt "caption"``. ``output/lecture_utils.po``
holds the package's own messages: every ``_("...")`` in lecture_utils and the exercises' hints.
Found with Python's ``ast``, never by running a notebook. Entries merge as msgmerge does: a new
string is untranslated, a changed one keeps its old translation as fuzzy, a removed one goes obsolete.
"""

from __future__ import annotations

import ast
import difflib
import re
from pathlib import Path

import polib

from lecture_utils.language import PLACEHOLDER

OUTPUT = Path("locale") / "zh_CN" / "LC_MESSAGES" / "output"
COMPILED = Path("lecture_utils") / "locale" / "zh_CN" / "LC_MESSAGES" / "lecture_utils.mo"
WORDS = re.compile(r"[A-Za-z]{2,}")
# call -> the positions of its arguments a reader sees ("*": every one, joined as print joins them)
SHOWN_ARGS = {"check": (0,), "measured": (0, 1, 2), "check_answer": (0,), "cuda_only": (1,), "print": "*",
              "set_title": (0,), "set_xlabel": (0,), "set_ylabel": (0,), "suptitle": (0,), "text": (2,),
              "annotate": (0,), "plot_roofline": (4,), "plot_depth": (1,)}
SHOWN_KWARGS = {"label", "title", "xlabel", "ylabel", "desc", "labels", "description"}
LABEL_LISTS = {"bar", "barh", "set_xticks", "set_yticks", "set_xticklabels", "set_yticklabels", "legend",
               "plot_training_curves"}


def template(node: ast.AST, source: str) -> str | None:
    """The text a reader sees from ``node``: a string, or an f-string's template; else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(value.value)
            elif isinstance(value.value, ast.Constant) and isinstance(value.format_spec, (ast.JoinedStr, type(None))) \
                    and all(isinstance(v, ast.Constant) for v in getattr(value.format_spec, "values", [])):
                spec = "".join(v.value for v in getattr(value.format_spec, "values", []))  # {'dtype':<14}: a
                parts.append(format(value.value.value, spec))  # table header's word, padded as printed
            else:  # {expression!conversion:spec}, as written
                spec = "" if value.format_spec is None else ":" + (template(value.format_spec, source) or "")
                conversion = "" if value.conversion == -1 else "!" + chr(value.conversion)
                parts.append("{" + ast.get_source_segment(source, value.value) + conversion + spec + "}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = template(node.left, source), template(node.right, source)
        if left is not None or right is not None:
            return (left if left is not None else "{" + ast.get_source_segment(source, node.left) + "}") + (
                right if right is not None else "{" + ast.get_source_segment(source, node.right) + "}")
    return None


def _call_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def shown_strings(source: str) -> list[str]:
    """What a code cell shows a reader, as templates, in order of appearance."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    found = []
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        name = _call_name(call)
        if name == "print":
            sep = next((template(k.value, source) for k in call.keywords if k.arg == "sep"), " ") or " "
            parts = [template(a, source) or "{" + ast.get_source_segment(source, a) + "}" for a in call.args]
            found.append(sep.join(parts))
        elif name in SHOWN_ARGS:
            found += [template(call.args[i], source) for i in SHOWN_ARGS[name] if i < len(call.args)]
        if name in LABEL_LISTS:
            found += [template(e, source) for a in call.args if isinstance(a, (ast.List, ast.Tuple)) for e in a.elts]
        found += [template(k.value, source) for k in call.keywords if k.arg in SHOWN_KWARGS]
        found += [template(e, source) for k in call.keywords if k.arg in SHOWN_KWARGS
                  and isinstance(k.value, (ast.List, ast.Tuple)) for e in k.value.elts]  # labels=[...]
        positions = range(len(call.args)) if SHOWN_ARGS.get(name) == "*" else SHOWN_ARGS.get(name, ())
        shown = [call.args[i] for i in positions if i < len(call.args)]
        for arg in shown + [k.value for k in call.keywords if k.arg in SHOWN_KWARGS]:
            if isinstance(arg, ast.IfExp):  # "a" if x else "b": either can be shown
                found += [template(arg.body, source), template(arg.orelse, source)]
            if isinstance(arg, ast.BoolOp):  # title or "default": either can be shown
                found += [template(value, source) for value in arg.values]
    return [s for s in found if s and WORDS.search(PLACEHOLDER.sub("", s))]


def notebook_strings(nb) -> list[tuple[str | None, str, str]]:
    """(msgctxt, msgid, where) for every string a notebook's code shows, and each caption."""
    entries, seen = [], set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        items = [(None, s) for s in shown_strings(cell.source)]
        if cell.metadata.get("caption"):
            items.append(("caption", cell.metadata["caption"]))
        for key in items:
            if key not in seen:
                seen.add(key)
                entries.append((*key, f"cell {cell.get('id', '?')}" + (" (alt text)" if key[0] else "")))
    return entries


def package_strings(root: Path) -> list[tuple[str | None, str, str]]:
    """The package's messages: every _("...") in lecture_utils, and the exercises' hints and names."""
    entries, seen = [], set()
    for path in sorted((root / "lecture_utils").rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        for call in (n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call)):
            if _call_name(call) == "_" and call.args and isinstance(call.args[0], ast.Constant):
                text = call.args[0].value
                if text not in seen:
                    seen.add(text)
                    entries.append((None, text, str(path.relative_to(root))))
    exercises = ast.parse((root / "lecture_utils" / "exercises.py").read_text(encoding="utf-8"))
    hints = [v for n in ast.walk(exercises) if isinstance(n, ast.Dict) for v in n.values]  # {wrong value: hint}
    hints += [t.elts[1] for n in ast.walk(exercises) if isinstance(n, ast.List) for t in n.elts
              if isinstance(t, ast.Tuple) and len(t.elts) == 2]  # _FACTORS: [(factor, hint)]
    for value in hints:
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value not in seen:
            seen.add(value.value)
            entries.append((None, value.value, "lecture_utils/exercises.py"))
    for module in ("plots.py", "widgets.py", "bench.py", "optim.py"):  # figures, calculators, labels, bars
        for text in shown_strings((root / "lecture_utils" / module).read_text(encoding="utf-8")):
            if text not in seen:
                seen.add(text)
                entries.append((None, text, f"lecture_utils/{module}"))
    return entries


def merge(po: polib.POFile, strings: list[tuple[str | None, str, str]]) -> bool:
    """Bring ``po`` in step with ``strings`` (in place), as msgmerge would; True if it changed."""
    before = [(e.msgctxt, e.msgid, e.msgstr, tuple(e.flags), e.obsolete, e.comment) for e in po]
    old = {(e.msgctxt, e.msgid): e for e in po}
    gone = {e.msgid: e for e in po if (e.msgctxt, e.msgid) not in {(c, m) for c, m, _ in strings} and e.msgstr}
    entries = []
    for msgctxt, msgid, where in strings:
        entry = old.get((msgctxt, msgid))
        if entry is None:
            entry = polib.POEntry(msgctxt=msgctxt, msgid=msgid, msgstr="")
            close = difflib.get_close_matches(msgid, list(gone), 1, 0.8)
            if close:  # a changed string keeps its translation, to be checked
                entry.msgstr, entry.flags, entry.previous_msgid = gone.pop(close[0]).msgstr, ["fuzzy"], close[0]
        entry.obsolete, entry.comment = False, where
        entries.append(entry)
    for entry in gone.values():
        entry.obsolete = True
    po[:] = entries + list(gone.values())
    return before != [(e.msgctxt, e.msgid, e.msgstr, tuple(e.flags), e.obsolete, e.comment) for e in po]


def placeholder_problems(po: polib.POFile, path: Path) -> list[str]:
    """A translation must keep its template's placeholders (the values go there)."""
    return [f"{path}: the translation of {e.msgid!r} must keep its placeholders {sorted(PLACEHOLDER.findall(e.msgid))}"
            for e in po if e.msgstr and not e.obsolete and not e.fuzzy
            and sorted(PLACEHOLDER.findall(e.msgid)) != sorted(PLACEHOLDER.findall(e.msgstr))]


def compile_catalogs(catalogs: dict[Path, polib.POFile]) -> tuple[polib.POFile, list[str]]:
    """One catalog of every translated, non-fuzzy entry (a caption is looked up by its text), and the
    strings two catalogs translate differently (one text shows one translation everywhere)."""
    chosen: dict[str, tuple[str, Path]] = {}
    problems = []
    for path, po in catalogs.items():
        for e in po:
            if e.msgstr and not e.fuzzy and not e.obsolete:
                first = chosen.setdefault(e.msgid, (e.msgstr, path))
                if first[0] != e.msgstr:
                    problems.append(f"{path}: {e.msgid!r} is translated differently in {first[1]}")
    merged = polib.POFile(encoding="utf-8")
    merged.metadata = {"Content-Type": "text/plain; charset=UTF-8", "Language": "zh_CN"}
    merged.extend(polib.POEntry(msgid=msgid, msgstr=msgstr) for msgid, (msgstr, _) in sorted(chosen.items()))
    return merged, problems


# --- the commands' output side (scripts/i18n.py calls these) ----------------------------------

MANUAL = "manual"  # output/manual.po: text only a run shows (a library's message), never extracted
HEADER = ("Chinese (zh_CN) translation of what {what} prints and draws: one entry per string, found in the\n"
          "code by scripts/i18n_outputs.py. `make i18n` updates it, `make zh` compiles it into\n"
          "lecture_utils/locale/ (CONTRIBUTING.md, \"Translations\"). Keep every {{placeholder}} as it is:\n"
          "the value shown goes there. An entry with msgctxt \"caption\" is a figure's alt text.")


def in_use(root: Path) -> bool:
    """A checkout with the package has output catalogs; a notebook-only copy (a test's) has none."""
    return (root / "lecture_utils" / "language.py").is_file()


def catalog_names(notebooks: list[str]) -> list[str]:
    return [*notebooks, "lecture_utils"]


def sources(root: Path, notebooks: list[str], read_notebook) -> dict[str, list[tuple[str | None, str, str]]]:
    found = {name: notebook_strings(read_notebook(root / "notebooks" / f"{name}.ipynb")) for name in notebooks}
    found["lecture_utils"] = package_strings(root)
    return found


def extract(root: Path, notebooks: list[str], read_notebook, read_catalog, new_catalog, dumps, write_bytes) -> list[str]:
    """Update output/<name>.po for each notebook and the package; one line per catalog."""
    lines = []
    if not in_use(root):
        return lines
    for name, strings in sources(root, notebooks, read_notebook).items():
        path = root / OUTPUT / f"{name}.po"
        if path.exists():
            po = read_catalog(path)
        else:
            po = new_catalog(f"output/{name}")
            po.header = HEADER.format(what="lecture_utils" if name == "lecture_utils" else f"notebooks/{name}.ipynb")
        changed = merge(po, strings) or not path.exists()
        if changed:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(path, dumps(po).encode("utf-8"))
        todo = sum(1 for e in po if not e.obsolete and (e.fuzzy or not e.msgstr))
        lines.append(f"{OUTPUT.as_posix()}/{name}.po: {'updated' if changed else 'unchanged'}; "
                     f"{len([e for e in po if not e.obsolete])} strings, {todo} to translate")
    return lines


def catalogs(root: Path, read_catalog) -> dict[Path, polib.POFile]:
    folder = root / OUTPUT
    return {p: read_catalog(p) for p in sorted(folder.glob("*.po"))} if folder.is_dir() else {}


def compiled(root: Path, read_catalog) -> tuple[bytes, list[str]]:
    """The .mo lecture_utils.language reads, and the strings translated two ways."""
    merged, problems = compile_catalogs(catalogs(root, read_catalog))
    return merged.to_binary(), problems


def problems(root: Path, notebooks: list[str], read_catalog) -> list[str]:
    """One line per string left to translate, per lost placeholder, per double translation, and a stale .mo."""
    found = []
    if not in_use(root):
        return found
    for path, po in catalogs(root, read_catalog).items():
        rel = path.relative_to(root).as_posix()
        found += [f"{rel}, line {e.linenum}: " + ("fuzzy" if e.fuzzy else "untranslated") + f": {e.msgid!r}"
                  for e in po if not e.obsolete and (e.fuzzy or not e.msgstr)]
        found += placeholder_problems(po, Path(rel))
    missing = [n for n in catalog_names(notebooks) if not (root / OUTPUT / f"{n}.po").exists()]
    found += [f"{OUTPUT.as_posix()}/{n}.po: missing (run make i18n)" for n in missing]
    data, twice = compiled(root, read_catalog)
    mo = root / COMPILED
    if not mo.exists() or mo.read_bytes() != data:
        found.append(f"{COMPILED.as_posix()}: not what the catalogs compile to (run make zh)")
    return found + twice


def caption(po_files: dict[Path, polib.POFile], text: str) -> str:
    """A figure's caption in Chinese (its alt text on the site and in the decks), or as it is."""
    for po in po_files.values():
        entry = po.find(text, msgctxt="caption")
        if entry is not None and entry.msgstr and not entry.fuzzy:
            return entry.msgstr
    return text
