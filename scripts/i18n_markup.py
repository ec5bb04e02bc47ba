"""The markdown a translation must keep (scripts/i18n.py check): code, math, link targets, HTML tags,
heading levels and the notes' § numbers; and the prose between them, which a reader reads as words
(the glossary's and the typography's rules look only there)."""

from __future__ import annotations

import re
from collections import Counter

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
