"""README.zh-CN.md says what README.md says (issue 36, item 5): section for section, the same
commands (code spans and code blocks, comments aside), the same numbers and the same section list,
so a change to one README that the other misses fails here. tests/test_readme.py checks each
README's map against the notes and the notebooks."""

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)
SPAN = re.compile(r"`([^`]+)`")  # a span may break across lines
# A number as the prose writes it: 1.7, 2,048, 1280×720 (two numbers), 2.5 (not the 2 and 5).
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")


def sections(text: str) -> list[tuple[int, str]]:
    """(heading level, body) of each section, the text before the first heading included (level 0);
    a line starting with # inside a code block (a shell comment) is not a heading."""
    blocks = [m.group(0) for m in FENCE.finditer(text)]
    hidden = FENCE.sub(lambda m: f"\0{blocks.index(m.group(0))}\0", text)
    parts = re.split(r"^(#{1,6}) .*$", hidden, flags=re.M)
    back = [re.sub(r"\0(\d+)\0", lambda m: blocks[int(m.group(1))], part) for part in parts]
    return [(0, back[0])] + [(len(back[i]), back[i + 1]) for i in range(1, len(back), 2)]


def commands(body: str) -> Counter:
    """The code of a section: each code span, each line of a code block with its comment cut off
    (a comment is prose, translated), and each entry of a plain block's first column (the Layout
    block's paths: what follows them is translated)."""
    found = Counter()
    for lang, block in FENCE.findall(body):
        for line in block.splitlines():
            if lang:
                line = re.sub(r"(^|\s+)#.*$", "", line).strip()
            elif line[:1].strip():
                line = line.split()[0]
            else:
                continue
            if line:
                found[line] += 1
    found.update(" ".join(s.split()) for s in SPAN.findall(FENCE.sub("", body)))
    return found


def numbers(body: str) -> set[str]:
    prose = SPAN.sub(" ", FENCE.sub(" ", body))
    prose = re.sub(r"\]\([^)]*\)|<!--.*?-->", " ", prose, flags=re.S)  # link targets, comments
    return set(NUMBER.findall(prose))


def pairs() -> list[tuple[tuple[int, str], tuple[int, str]]]:
    english = sections((ROOT / "README.md").read_text(encoding="utf-8"))
    chinese = sections((ROOT / "README.zh-CN.md").read_text(encoding="utf-8"))
    assert [level for level, _ in chinese] == [level for level, _ in english], \
        "README.zh-CN.md's sections are not README.md's (one heading a section, in the same order and level)"
    return list(zip(english, chinese, strict=True))


def heading_of(index: int) -> str:
    text = FENCE.sub("", (ROOT / "README.md").read_text(encoding="utf-8"))
    return ["(before the first heading)", *re.findall(r"^#{1,6} (.*)$", text, re.M)][index]


def test_the_two_readmes_have_the_same_sections():
    assert len(pairs()) >= 10


@pytest.mark.parametrize("what, of", [("commands", commands), ("numbers", numbers)])
def test_each_section_of_the_chinese_readme_has_the_english_ones(what, of):
    differ = []
    for i, ((_, english), (_, chinese)) in enumerate(pairs()):
        en, zh = of(english), of(chinese)
        if en != zh:
            missing = sorted(en - zh) if isinstance(en, set) else sorted((en - zh).elements())
            extra = sorted(zh - en) if isinstance(zh, set) else sorted((zh - en).elements())
            differ.append(f"{heading_of(i)}: README.zh-CN.md lacks {missing}, has more {extra}")
    assert not differ, f"the two READMEs' {what} differ:\n" + "\n".join(differ)


def test_the_comparison_catches_a_drift():
    """The faults issue 36 found in README.zh-CN.md: an old disk size, a missing command."""
    english = "## Setting up\n\nAbout 1.7 GB of disk; `PIP_EXTRA_INDEX_URL=x make setup` takes 192 MB.\n"
    chinese = "## 安装\n\n约 1.5 GB 磁盘空间。\n"
    assert numbers(english) == {"1.7", "192"} and numbers(chinese) == {"1.5"}
    assert commands(english) - commands(chinese) == Counter({"PIP_EXTRA_INDEX_URL=x make setup": 1})
    assert commands("```bash\nmake lab    # set up\n```\n") == commands("```bash\nmake lab    # 安装\n```\n")
