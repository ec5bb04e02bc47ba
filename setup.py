"""Which packages and data the wheel holds (everything else is in pyproject.toml).

Setuptools can only find the ``lecture_utils.*`` subpackages on its own, or take a fixed
list, in pyproject.toml; this needs both: every subpackage (found, so a new one cannot be
left out) plus the committed data. ``pip install .`` copies ``data/tokenizer.json`` and
``data/tokens/`` to ``lecture_utils/_data/``, where ``lecture_utils.data.data_dir()`` looks
for them; the corpus stays in the repository. An editable install (``make setup``) reads
the checkout's ``data/`` directly.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["lecture_utils", "lecture_utils.*"]),
              "lecture_utils._data", "lecture_utils._data.tokens"],
    package_dir={"lecture_utils._data": "data"},
    package_data={"lecture_utils._data": ["tokenizer.json"],
                  "lecture_utils._data.tokens": ["*.bin", "*.json"]},
)
