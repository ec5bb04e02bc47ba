"""Sphinx configuration of the course site (`make site`, scripts/build_site.py).

scripts/build_site.py copies this folder into a temporary folder, adds display copies of
the notebooks (MyST-NB cell tags: build_site.VIEWS) and the generated index, and runs
Sphinx there; notebooks/ is never touched. Why Sphinx + MyST-NB + sphinx-book-theme: all
three are pip packages that build offline from the notebooks' stored outputs, the theme
ships its own JS, CSS and fonts, and Sphinx's search index is a plain script that works
from file://. (Jupyter Book 2 / mystmd downloads its theme at build time, which this
machine cannot do.)

Two editions: build_site.py builds this project once in English and once with
``-D language=zh_CN`` (the Chinese notebooks, into build/site/zh/), passing the other edition's
folder and name as ``-A lang_switch_*``: every page then links to itself in the other language
(_templates/lang-switch.html). Sphinx's Chinese search splits words with jieba (a dev pin);
Sphinx's own words (Search, Contents ...) come from its and the theme's zh_CN catalogs, the
index's from locale/zh_CN/LC_MESSAGES/index.po here.
"""

import contextlib
import logging
from pathlib import Path

# jieba (Sphinx's Chinese search) logs four DEBUG lines to stderr as it loads its dictionary.
with contextlib.suppress(ImportError):
    import jieba

    jieba.setLogLevel(logging.WARNING)

project = "PyTorch and resource accounting"
author = "the course authors"
copyright = "2025, the course authors"

# sphinx_copybutton: a copy button on every code block (ClipboardJS, shipped with it: no network).
extensions = ["myst_nb", "sphinx_togglebutton", "sphinx_copybutton"]
exclude_patterns = ["_build", ".doctrees", "**.ipynb_checkpoints"]
templates_path = ["_templates"]
# The Chinese index's text (language = "zh_CN"); the notebook pages are Chinese already.
locale_dirs = ["locale"]

# -- Notebooks: render the stored (golden) outputs, never execute ---------------------
nb_execution_mode = "off"
# MyST-NB would add require.js and the widget manager from CDNs if a notebook stored
# widget state; the pages must not touch the network, so never load them.
nb_ipywidgets_js = {}

# -- Markdown: $...$ / $$...$$ and AMS environments become math for MathJax -----------
myst_enable_extensions = ["dollarmath", "amsmath"]
# Anchors on headings down to ###, so the index can link the README's map to sections.
myst_heading_anchors = 3

# -- MathJax 3 from npm (scripts/vendor.py), copied into _static/mathjax/ by build_site.py
# A relative path is taken relative to _static, so the pages load it from file://.
mathjax_path = "mathjax/tex-chtml.js"

# -- HTML ---------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = project
html_static_path = ["_static"]
html_css_files = ["lecture.css"]  # Going-deeper sections set apart; long code lines wrap; CJK fonts
html_last_updated_fmt = None
# The pages follow the reader's light or dark setting. Without a default mode the theme starts
# from an empty one and logs "Got invalid theme mode" on every page.
html_context = {"default_mode": "auto"}
html_theme_options = {
    "home_page_in_toc": True,      # the index is the first entry of the sidebar toc
    "use_download_button": True,   # a .ipynb download on every notebook page
    "use_fullscreen_button": False,
    "show_toc_level": 2,           # the in-page toc shows the § sections and their ###
    "navigation_with_keys": True,  # ← and → go to the previous and the next page
    "navbar_persistent": [],       # one search box (the sidebar's), not a second in a header bar
    # English | 中文 at the top of every page, before the download and theme buttons
    "article_header_end": ["lang-switch.html", "article-header-buttons.html"],
}

# -- Copy buttons: on the code (cell inputs, code blocks in the text), not on outputs --------
# MyST-NB puts a cell's input in div.highlight-ipython3 and an output in div.output.highlight-myst-ansi.
copybutton_selector = 'div[class*="highlight-"]:not(.output) > div.highlight > pre'


# -- The language switch: the same page in the other edition ---------------------------

def _language_switch(app, pagename, templatename, context, doctree):
    """``lang_switch_href`` for _templates/lang-switch.html: from this page to its twin, which
    has the same name in the other edition's folder (``-A lang_switch_prefix``, from this
    edition's root)."""
    prefix = context.get("lang_switch_prefix")
    if prefix is not None:
        up = "../" * pagename.count("/")
        context["lang_switch_href"] = up + prefix + app.builder.get_target_uri(pagename)


# -- Chinese search ---------------------------------------------------------------------

def _chinese_search():
    """Sphinx's Chinese search, its page working: Sphinx 9.0.4's language_data.js for zh ends with
    ``window.Stemmer = ChineseStemmer``, a class it never defines (the Chinese search stems its
    Latin words with the English stemmer), so the search page stops at "Searching..."
    (sphinx-doc/sphinx#14229, fixed by #14416 after 9.0.4). The stemmer's name is
    ``language_name`` + "Stemmer"; this names the English one it ships."""
    from sphinx.search.zh import SearchChinese

    class SearchChineseStemmedInEnglish(SearchChinese):
        language_name = "English"

    return SearchChineseStemmedInEnglish


# jieba's user dictionary: build_site.py writes the glossary's Chinese words into the Chinese edition's
# source folder (locale/zh_CN/glossary.md), so that its index holds 优化器 and 算术强度 whole.
_SEARCH_DICTIONARY = Path(__file__).with_name("jieba_dict.txt")
if _SEARCH_DICTIONARY.is_file():
    html_search_options = {"dict": str(_SEARCH_DICTIONARY)}


def setup(app):
    app.connect("html-page-context", _language_switch)
    app.add_search_language(_chinese_search())
