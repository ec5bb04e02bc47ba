"""The Chinese edition's glossary, locale/zh_CN/glossary.md, and what `i18n.py check` holds the
catalogs to with it (issues 30 and 36). scripts/i18n.py reads the catalogs and names the cells.

Two tables:

``| English | 中文（笔记的写法） | 笔记 |``
    A term and the form the translation writes where an entry's English has the term (a whole
    word, any case, outside code, math, links and HTML). A form that glosses, ``stride（步幅）``, is
    due whole at the term's first use in a notebook, its first part (stride) after that. Rows of one
    term's senses, ``kernel (GPU)`` and ``kernel (operating system, Jupyter)``, accept either form;
    a term inside a longer one (tensor in tensor core) is the longer one's.
``| 不用 | 改用 | 英文含有 |``
    A form not to write, what to write instead, and either nothing (wrong anywhere) or an English
    word (wrong where the entry's English has it: 作业 is a course's assignment, never a training
    job). A banned form inside one of the first table's forms (tensor in 张量（tensor）) or inside a
    「quote」 (the notes' or a source's own words) is left alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

TERMS_HEADER = ("English", "中文（笔记的写法）", "笔记")
BANNED_HEADER = ("不用", "改用", "英文含有")
QUOTE = re.compile(r"「[^」]*」")


def whole_word(english: str) -> re.Pattern:
    """A whole word or words (plural too), not part of a hyphenated one: "forward" is not in "feed-forward".
    Words may break across a line, a blockquote's too ("tensor\n> core")."""
    words = [re.escape(w) for w in english.split()]
    return re.compile(r"(?<![\w-])" + r"[\s>-]+".join(words) + r"(?:e?s)?(?![\w-])", re.I)


@dataclass(frozen=True)
class Term:
    english: str
    chinese: str
    section: str
    line: int

    @property
    def key(self) -> str:
        """The term as an English text writes it: "kernel (GPU)" is kernel, in one of its senses."""
        return re.sub(r"\s*\([^)]*\)$", "", self.english)

    @property
    def pattern(self) -> re.Pattern:
        return whole_word(self.key)

    @property
    def short(self) -> str:
        """Where the form glosses the term on first use, ``stride（步幅）``, the form after it: stride."""
        gloss = re.fullmatch(r"(.+?)[（(].+[）)]", self.chinese)
        return gloss.group(1).strip() if gloss else self.chinese


@dataclass(frozen=True)
class Banned:
    chinese: str  # the form not to write
    instead: str  # what to write
    english: str  # "": wrong anywhere; else wrong only where the English has this word
    line: int

    def found(self, text: str) -> bool:
        """Whether ``text`` (casefolded) writes the form: a Latin one as a whole word."""
        form = re.escape(self.chinese.casefold())
        return re.search(rf"(?<![a-z_]){form}(?:e?s)?(?![a-z_])" if self.chinese.isascii() else form, text) is not None


class Glossary(list):
    """The terms, in order, and ``banned``: the forms not to write."""
    banned: list[Banned] = []


def row(line: str) -> list[str] | None:
    line = line.strip()
    if not (line.startswith("|") and line.endswith("|") and len(line) > 1):
        return None
    return [cell.strip() for cell in line[1:-1].split("|")]


def _table(lines: list[str], path: Path, header: tuple, shape: str, required: bool):
    """(line number, cells) of each row of the table headed ``header``; ValueError: one line."""
    start = next((i for i, line in enumerate(lines) if tuple(row(line) or ()) == header), None)
    if start is None:
        if required:
            raise ValueError(f"{path}: no table headed | {' | '.join(header)} |")
        return
    separator = row(lines[start + 1]) if start + 1 < len(lines) else None
    if not separator or not all(re.fullmatch(r":?-{3,}:?", c) for c in separator):
        raise ValueError(f"{path}, line {start + 2}: the table's header needs its | --- | --- | --- | line")
    for number, line in enumerate(lines[start + 2:], start + 3):
        cells = row(line)
        if cells is None:
            return
        if len(cells) != 3 or not cells[0] or not cells[1]:
            raise ValueError(f"{path}, line {number}: a row is {shape}")
        yield number, cells


def read_glossary(path: Path) -> Glossary:
    """Both tables of ``path``; ValueError (one line naming the file and line) where one is broken."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: cannot read the glossary ({e})") from None
    glossary, seen = Glossary(), {}
    for number, cells in _table(lines, path, TERMS_HEADER, "| English term | 中文 form | the notes' section |", True):
        english = " ".join(cells[0].split())
        if english.lower() in seen:
            raise ValueError(f"{path}, line {number}: {cells[0]!r} is already on line {seen[english.lower()]}")
        seen[english.lower()] = number
        glossary.append(Term(english, cells[1], cells[2], number))
    glossary.banned = [Banned(*cells, number) for number, cells in _table(
        lines, path, BANNED_HEADER, "| the form not to write | what to write | an English word, or nothing |", False)]
    return glossary


def misused(english: str, chinese: str, glossary: Glossary) -> list[str]:
    """One phrase per banned form that ``chinese`` writes where ``english`` makes it wrong (both prose)."""
    text = QUOTE.sub(" ", chinese).casefold()
    banned = getattr(glossary, "banned", [])
    forms = {f.casefold() for t in glossary for f in (t.chinese, t.short)} - {b.chinese.casefold() for b in banned}
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, " ")
    return [f"writes {b.chinese}, which the glossary rules out" + (f" where the English says {b.english!r}"
            if b.english else "") + f" (line {b.line}): write {b.instead}"
            for b in banned if (not b.english or whole_word(b.english).search(english)) and b.found(text)]


def glossary_problems(name: str, pairs: list, glossary: Glossary, prose, where) -> list[str]:
    """One line per translated entry of notebook ``name`` (``pairs``: (cell id, POEntry)) whose
    English uses a term its Chinese does not write in the glossary's form, or whose Chinese writes a
    form the glossary rules out. ``prose`` and ``where`` are scripts/i18n.py's."""
    problems, senses = [], {}
    for term in glossary:
        senses.setdefault(term.key, []).append(term)
    first_use = dict.fromkeys(senses, True)
    inside = {key: "|".join(t.pattern.pattern for t in glossary if t.key != key and s[0].pattern.search(t.key))
              for key, s in senses.items()}
    for cell_id, entry in pairs:
        english, chinese = prose(entry.msgid), prose(entry.msgstr)
        done, here = entry.msgstr and not entry.fuzzy, where(name, cell_id, entry.msgid)
        for key, (term, *others) in senses.items():
            if not term.pattern.search(re.sub(inside[key], " ", english, flags=re.I) if inside[key] else english):
                continue
            due = [t.chinese if first_use[key] else t.short for t in (term, *others)]
            first_use[key] = False
            if done and not any(form.casefold() in chinese.casefold() for form in due):
                section = f", {term.section}" if term.section else ""
                problems.append(f"{here}: {key!r} is written {' or '.join(due)} (the notes' form, glossary{section}"
                                f"{'; its first use in the notebook' if due[0] != term.short else ''})")
        if done:
            problems += [f"{here}: {phrase}" for phrase in misused(english, chinese, glossary)]
    return problems
