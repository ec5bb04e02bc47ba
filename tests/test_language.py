"""lecture_utils.language: the language chosen once, and text translated where it is shown."""

import builtins

import matplotlib
import pytest
from matplotlib.text import Text

from lecture_utils import language


@pytest.fixture
def chinese(monkeypatch):
    monkeypatch.setenv(language.LANG_ENV_VAR, "zh_CN")
    print_, set_text, family = builtins.print, Text.set_text, matplotlib.rcParams["font.family"]
    yield
    builtins.print, Text.set_text = print_, set_text  # install() patches them: undone for the next test
    matplotlib.rcParams["font.family"] = family


def test_english_unless_asked_or_started_in_notebooks_zh(tmp_path, monkeypatch):
    monkeypatch.delenv(language.LANG_ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    assert language.current() == "en"
    (tmp_path / "notebooks" / "zh").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "notebooks" / "zh")  # where Lab, nbval and nbconvert start its kernel
    assert language.current() == "zh_CN"
    monkeypatch.setenv(language.LANG_ENV_VAR, "en")
    assert language.current() == "en"
    monkeypatch.setenv(language.LANG_ENV_VAR, "fr")
    with pytest.raises(ValueError, match=r"LECTURE_LANG='fr'; valid: en, zh_CN"):
        language.current()


def test_in_english_everything_is_shown_as_written(monkeypatch):
    monkeypatch.setenv(language.LANG_ENV_VAR, "en")
    assert language._("1 thread") == "1 thread" and language.translate("5 threads") == "5 threads"


def test_a_msgid_and_a_template_are_translated_with_their_values(chinese):
    assert language._("{n} threads").format(n=5) == "5 个线程"
    assert language.translate("5 threads") == "5 个线程"  # "{n} threads", filled
    assert language.translate("step") == "步"
    assert language.translate("no such text in any catalog") == "no such text in any catalog"
    assert language.translate("3.14e+23") == "3.14e+23"  # nothing to translate


def test_a_printed_table_is_translated_line_by_line(chinese):
    assert language.translate_text("step\nlearning rate") == "步\n学习率"


def test_install_translates_what_a_cell_prints_and_draws_once(chinese, capsys):
    language.install()
    first = builtins.print
    language.install()  # a second setup() in the same kernel changes nothing
    assert builtins.print is first
    print("1 thread")
    print("learning rate", file=None)
    assert capsys.readouterr().out == "1 个线程\n学习率\n"
    assert Text(0, 0, "validation loss").get_text() == "验证 loss"
