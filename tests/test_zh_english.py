"""A Chinese reader meets no English sentence in notebooks/zh/ (issue 36): not in the markdown, not in
what the code printed, not in the text its figures draw.

An English sentence is a run of three or more English words (a capital or small letter followed by
small letters: "is not right yet") with nothing but spaces and light punctuation between them.
Excluded, as the code, identifiers, units and titles a Chinese text keeps:

- code: markdown's code spans, fenced code, math, link targets, HTML tags and URLs;
- printed values: a tensor, list, tuple, dict or set as Python shows it, an object's ``<...>``
  form, and any text in quotes (a repr's strings, a quoted title);
- identifiers and units: a word holding a digit, an underscore, a dot or a slash, or written in
  capitals (fp32, x.T, get_batch, MFU, GB/s: none is a "word" above);
- titles in italics (``*The Jargon File*``).

The figures' text is what each figure of a Chinese notebook recorded in its output's metadata
(``texts``, written by lecture_utils.language when it drew the figure).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LESSONS = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()
sys.path.insert(0, str(ROOT / "scripts"))
spec = importlib.util.spec_from_file_location("i18n", ROOT / "scripts" / "i18n.py")
i18n = importlib.util.module_from_spec(spec)
sys.modules.setdefault("i18n", i18n)
spec.loader.exec_module(i18n)

WORD = r"[A-Za-z][a-z]+(?:['’-][a-z]+)*"
SENTENCE = re.compile(rf"(?<![\w.\-/]){WORD}(?:[ ,;:()\"'–-]+{WORD}){{2,}}(?![\w./])")
QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|“[^”\n]*”|「[^」\n]*」")
ITALIC = re.compile(r"(?<![*\w])\*[^*\n]+\*(?!\*)")
REPR = re.compile(r"^\s*(tensor\(|Parameter|array\(|[\[{(<]|\d+ tokens:|[A-Z]\w*\(children=)")
LABELLED = re.compile(r"^(.*?[:：]\s*)([\[{(].*)$")  # "✓ label: {'x': True}": a label, then a value
VALUE_NAMES = {"True", "False", "None", "inf", "nan"}


def is_value(text: str) -> bool:
    """A Python literal as Python prints it (``[inf, 448.0]``, ``{'x': True}``), not prose in brackets."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        return False
    return all(isinstance(node, (ast.Expression, ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict,
                                 ast.UnaryOp, ast.USub, ast.Load))
               or (isinstance(node, ast.Name) and node.id in VALUE_NAMES) for node in ast.walk(tree))


def without_value(line: str) -> str:
    labelled = LABELLED.match(line)
    return labelled.group(1) if labelled and is_value(labelled.group(2)) else line


def english_sentences(text: str) -> list[str]:
    text = ITALIC.sub(" ", QUOTED.sub(" ", text))
    return [m.group(0) for m in SENTENCE.finditer(text)]


def reader_text(nb: dict) -> list[tuple[str, str]]:
    """(where, text) for everything a reader of the notebook reads."""
    found = []
    for cell in nb["cells"]:
        where = f"cell {cell.get('id', '?')}"
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            found.append((where, i18n.prose(source)))
            continue
        for out in cell.get("outputs", []):
            text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
            found += [(where, without_value(line)) for line in text.splitlines() if not REPR.match(line)]
            texts = out.get("metadata", {}).get("image/png", {}).get("texts", [])
            found += [(f"{where} (figure)", t) for t in texts]
    return found


def count(name: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / "zh" / f"{name}.ipynb").read_text(encoding="utf-8"))
    return [f"{where}: {s!r}" for where, text in reader_text(nb) for s in english_sentences(text)]


def test_the_rule_finds_english_sentences_and_keeps_code_identifiers_units_and_titles():
    assert english_sentences("Q4, days at MFU 0.4: not answered yet (replace the ...)") == ["not answered yet (replace the"]
    assert english_sentences("✓ x 的 stride 是 (4, 1)：fp32 的 MFU 0.51，memory-bound") == []
    assert english_sentences("[实测] 计时条件: 可靠（2 个核心，负载 0.9）") == []
    assert english_sentences("见 *The Jargon File* 与 'a quoted title here'") == []
    assert english_sentences("torch.get_float32_matmul_precision() 是 x.T.contiguous()") == []
    assert english_sentences("a view is cheap; 一个 view 很便宜") == ["view is cheap"]  # "a": one letter


def test_a_printed_value_after_a_label_is_not_a_sentence_but_prose_in_brackets_is():
    assert without_value("✓ 全部相等：{'x': True, 'y': False, 'z': None}") == "✓ 全部相等："
    assert without_value("✓ 可表示：[inf, inf, 448.0, -1e-05]") == "✓ 可表示："
    assert without_value("✓ 结果：(not answered yet)") == "✓ 结果：(not answered yet)"
    assert english_sentences(without_value("✓ 结果：[this is prose]")) == ["this is prose"]


def test_a_figure_records_the_text_it_draws_in_chinese(tmp_path):
    """lecture_utils.language in a notebooks/zh/ kernel: the figure's title is translated and recorded."""
    nb = json.loads((ROOT / "notebooks" / "zh" / "08_training_loop.ipynb").read_text(encoding="utf-8"))
    figures = [out for cell in nb["cells"] for out in cell.get("outputs", []) if "image/png" in out.get("data", {})]
    assert figures and all("texts" in out["metadata"]["image/png"] for out in figures)


@pytest.mark.parametrize("name", LESSONS)
def test_a_chinese_reader_meets_no_english_sentence(name):
    found = count(name)
    assert not found, f"notebooks/zh/{name}.ipynb: {len(found)} English sentences:\n" + "\n".join(found[:40])


def test_every_character_a_translation_draws_has_a_glyph():
    """A figure draws Latin text in DejaVu Sans and falls back to the shipped Chinese subset
    (lecture_utils/fonts, scripts/subset_font.py): together they hold every character the output
    catalogs' translations use, so no figure shows a missing-glyph box on a fresh machine."""
    import matplotlib.font_manager
    import polib
    from fontTools.ttLib import TTFont

    from lecture_utils.language import FONT

    dejavu = TTFont(matplotlib.font_manager.findfont("DejaVu Sans")).getBestCmap()
    shipped = TTFont(str(FONT)).getBestCmap()
    used = {ch for path in (ROOT / "locale" / "zh_CN" / "LC_MESSAGES" / "output").glob("*.po")
            for entry in polib.pofile(str(path)) for ch in entry.msgstr if not ch.isspace()}
    missing = sorted(ch for ch in used if ord(ch) not in dejavu and ord(ch) not in shipped)
    assert not missing, f"no glyph for {''.join(missing)!r}: run python scripts/subset_font.py"


def test_a_chinese_figure_draws_with_no_missing_glyph(tmp_path, monkeypatch):
    """matplotlib warns "Glyph ... missing from font(s)" for a character it cannot draw: none here."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from lecture_utils import language

    monkeypatch.setenv(language.LANG_ENV_VAR, "zh_CN")
    with matplotlib.rc_context():  # the font family goes back for the tests after this one
        language._install_matplotlib()
        fig, ax = plt.subplots()
        ax.set_title("每个数的各位：符号 / 指数（范围）/ 尾数（精度）")
        ax.set_xlabel("step")  # translated where it is drawn
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fig.savefig(tmp_path / "zh.png")
        assert ax.get_xlabel() == "步"
        plt.close(fig)
