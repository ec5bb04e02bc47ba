"""The language a notebook prints and draws in: English, or the Chinese edition's (zh_CN).

Chosen once per kernel, never by editing a cell: ``LECTURE_LANG`` (``en`` or ``zh_CN``) if set,
else the notebook's folder, because a kernel starts in its notebook's folder (JupyterLab,
nbval, nbconvert): a kernel started in ``notebooks/zh/`` speaks Chinese.

In Chinese, the package's own messages go through ``_(msgid)``, and ``setup()`` calls
:func:`install`, after which what a cell prints (``print``, ``check`` and ``measured`` labels)
and draws (titles, axis labels, legends, text) is translated where it is shown, as gettext does
with a msgid: an exact string is looked up; an f-string's text is a *template* whose values fill
its translation (``"{dt} peak"`` -> ``"{dt} 峰值"``). The catalog is
``lecture_utils/locale/zh_CN/LC_MESSAGES/lecture_utils.mo``, compiled by ``make zh`` from
``locale/zh_CN/LC_MESSAGES/output/*.po`` (scripts/i18n.py). Nothing in a cell changes.
"""

from __future__ import annotations

import builtins
import functools
import gettext
import os
import re
from pathlib import Path

LANG_ENV_VAR = "LECTURE_LANG"
LANGUAGES = ("en", "zh_CN")
CATALOG = Path(__file__).resolve().parent / "locale" / "zh_CN" / "LC_MESSAGES" / "lecture_utils.mo"
FONT = Path(__file__).resolve().parent / "fonts" / "NotoSansSC-lecture.otf"
PLACEHOLDER = re.compile(r"\{(?:[^{}]|\{[^{}]*\})*\}")  # {x}, {n:,}, and one level of nesting: {", ".join(f"{n}" ...)}


def current() -> str:
    """``en`` or ``zh_CN``: ``$LECTURE_LANG``, else Chinese in a notebooks/zh/ folder."""
    chosen = os.environ.get(LANG_ENV_VAR)
    if chosen:
        if chosen not in LANGUAGES:
            raise ValueError(f"{LANG_ENV_VAR}={chosen!r}; valid: {', '.join(LANGUAGES)}")
        return chosen
    cwd = Path.cwd()
    return "zh_CN" if cwd.name == "zh" and cwd.parent.name == "notebooks" else "en"


@functools.cache
def _catalog() -> tuple[dict[str, str], list[tuple[re.Pattern, str, list[str]]]]:
    """(exact msgid -> msgstr, [(template regex, msgstr, placeholder names)])."""
    with CATALOG.open("rb") as f:
        messages = {k: v for k, v in gettext.GNUTranslations(f)._catalog.items() if k and v}
    templates = []
    for msgid, msgstr in messages.items():
        names = PLACEHOLDER.findall(msgid)
        if names:
            parts = PLACEHOLDER.split(msgid)
            pattern = "(.*?)".join(re.escape(part) for part in parts)
            templates.append((re.compile(pattern + r"\Z", re.S), msgstr, names))
    templates.sort(key=lambda t: -len(t[0].pattern))  # the most specific template first
    return messages, templates


def _(msgid: str) -> str:
    """The package's message ``msgid`` in the current language (``.format`` it after)."""
    if current() == "en":
        return msgid
    return _catalog()[0].get(msgid, msgid)


def translate(text: str) -> str:
    """``text`` as a reader of the current language sees it: its translation, or the translation of
    the template it was formatted from, filled with its values; otherwise ``text`` unchanged."""
    if current() == "en" or not text or not isinstance(text, str):
        return text
    messages, templates = _catalog()
    if text in messages:
        return messages[text]
    if not re.search(r"[A-Za-z]", text):
        return text
    for pattern, msgstr, names in templates:
        match = pattern.match(text)
        if match:
            values = dict(zip(names, match.groups(), strict=True))
            return PLACEHOLDER.sub(lambda m, values=values: values.get(m.group(), m.group()), msgstr)
    return text


def translate_text(text: str) -> str:
    """``text`` translated as a whole, or else each of its lines on its own (a printed table)."""
    whole = translate(text)
    return whole if whole != text or "\n" not in text else "\n".join(translate(line) for line in text.split("\n"))


def install() -> None:
    """In Chinese, translate what cells print and draw from now on (idempotent); in English, nothing."""
    if current() == "en" or getattr(builtins.print, "_translated", False):
        return
    original = builtins.print

    def print(*args, sep=" ", end="\n", file=None, flush=False):  # noqa: A001
        if file is None:  # what a cell prints; not what goes to a file
            args = (translate_text(sep.join(map(str, args))),)
        original(*args, sep=sep, end=end, file=file, flush=flush)

    print._translated = True
    builtins.print = print
    _install_matplotlib()


def _install_matplotlib() -> None:
    import matplotlib as mpl
    from matplotlib import font_manager
    from matplotlib.text import Text

    if FONT.is_file():  # the Chinese glyphs, after the Latin ones of the default font
        font_manager.fontManager.addfont(str(FONT))
        family = font_manager.FontProperties(fname=str(FONT)).get_name()
        mpl.rcParams["font.family"] = ["DejaVu Sans", family]
    set_text = Text.set_text

    def translated(self, s):
        return set_text(self, translate_text(s) if isinstance(s, str) else s)

    Text.set_text = translated
    try:
        from IPython import get_ipython
    except ImportError:  # a plain python3: no notebook output to describe
        return
    shell = get_ipython()
    if shell is not None:
        _describe_figures(shell)


def _describe_figures(shell) -> None:
    """Each figure a cell shows carries the text it draws in its output's metadata (``texts``), so that
    a test can read what a reader of the figure sees without drawing it again."""
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    formatter = shell.display_formatter.formatters["image/png"]
    draw = formatter.lookup_by_type(Figure)  # the inline backend's (retina) PNG

    def png(fig):
        shown = draw(fig)
        if shown is None:  # an empty figure shows nothing
            return None
        data, metadata = shown if isinstance(shown, tuple) else (shown, {})
        texts = [t.get_text() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
        return data, {**metadata, "texts": texts}

    formatter.for_type(Figure, png)
