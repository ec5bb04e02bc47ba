"""The Chinese site's search finds what a reader types (issue 36, item 7): 张量, 优化器, the Chinese
form of every glossary term (locale/zh_CN/glossary.md) and every word of each notebook's Chinese
title. Sphinx's zh search splits the pages with jieba, which cuts 优化器 into 优化 + 器 unless it is
told the word: scripts/build_site.py gives it the glossary's words (search_words), conf.py hands
them to Sphinx (html_search_options = {"dict": ...}).

This reads the index `make site` built (build/site/zh/searchindex.js: `make site-check` builds it
first, and runs this) and looks each word up as Sphinx's searchtools.js does. That jieba, told the
glossary's words, keeps each whole needs no site: tests/test_site.py."""

import json
import logging
import re
import sys
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.site
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import build_site  # noqa: E402
import i18n_glossary  # noqa: E402

INDEX = ROOT / "build" / "site" / "zh" / "searchindex.js"
NOTEBOOKS = (ROOT / "notebooks.txt").read_text(encoding="utf-8").split()


def tokenizer(dictionary: Path | None = None):
    """A jieba of its own (loading a dictionary into jieba's global one would reach other tests)."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    words = jieba.Tokenizer()
    if dictionary is not None:
        words.load_userdict(str(dictionary))
    return words


def queries() -> dict[str, list[str]]:
    """What a reader types, and why: each glossary form's words (Latin ones too), for every term the
    English notebooks' text uses (the glossary check then puts its form in the Chinese page; compute
    accounting, a term of the notes, is in no notebook, so no page can have 算力核算), and the words
    of each Chinese notebook's title as jieba (told the glossary) cuts them."""
    import i18n

    english = "\n".join(i18n.prose(cell.source) for name in NOTEBOOKS
                        for cell in i18n.translatable(nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)))
    asked = {"张量": ["张量"], "优化器": ["优化器"]}
    for term in i18n_glossary.read_glossary(ROOT / "locale" / "zh_CN" / "glossary.md"):
        if term.pattern.search(english):
            asked[f"glossary: {term.chinese}"] = [w for w in re.split(r"[\s（）()、，/-]+", term.chinese) if w]
    assert len(asked) > 40, "the glossary's terms are missing: the check looks at nothing"
    return asked


def found(index: dict, word: str) -> set[int]:
    """The pages searchtools.js lists for one word: its stem in the text's or the titles' terms, or
    (longer than two characters) inside a longer term."""
    import snowballstemmer

    stem = snowballstemmer.stemmer("english").stemWord(word.lower())
    pages = set()
    for terms in (index["terms"], index["titleterms"]):
        hits = [terms[stem]] if stem in terms else [v for k, v in terms.items() if len(stem) > 2 and stem in k]
        for hit in hits:
            pages.update(hit if isinstance(hit, list) else [hit])
    return pages


@pytest.mark.skipif(not INDEX.is_file(), reason="no build/site/zh: run `make site-check` (it builds it first)")
def test_the_chinese_index_finds_every_glossary_term_and_title_word(tmp_path):
    text = INDEX.read_text(encoding="utf-8")
    index = json.loads(text[text.index("(") + 1:text.rindex(")")])
    dictionary = tmp_path / build_site.SEARCH_DICTIONARY
    dictionary.write_text("".join(f"{w}\n" for w in build_site.search_words()), encoding="utf-8")
    words = tokenizer(dictionary)
    asked = queries()
    for name in NOTEBOOKS:
        title = build_site.notebook_title(nbformat.read(ROOT / "notebooks" / "zh" / f"{name}.ipynb", as_version=4))
        asked[f"title of {name}: {title}"] = [w for w in words.cut(title)
                                              if len(w) > 1 and not w.isdigit() and re.match(r"\w", w)]
    missed = []
    for why, query in asked.items():
        pages = [found(index, w) for w in query if not w.isdigit()]
        if not pages or not set.intersection(*pages):  # searchtools.js wants every word on one page
            missed.append(f"{' '.join(query)} ({why})")
    assert not missed, "the Chinese search finds no page for:\n" + "\n".join(missed)
    assert not found(index, "不存在的词"), "the lookup finds anything: the check looks at nothing"
