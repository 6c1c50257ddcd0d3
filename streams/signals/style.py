"""R_style inputs: black and flake8's checkers through their Python APIs.

flake8 is a wrapper around pyflakes (F codes) and pycodestyle (E/W codes). Its public
`legacy` API only checks files, keeps counts across calls and costs ~50 ms to set up;
calling the two checkers directly on the source string measured ~1 ms a candidate against
~3.3 ms for flake8 on a temporary file, with the same codes: pyflakes messages are mapped
to F codes with flake8's own table (`FLAKE8_PYFLAKES_CODES`).

Classes, worst first:
- `unparsable`: the code is not valid Python.
- `logical`: a code of `LOGICAL_CODES` (or any pyflakes F code): the program is likely wrong.
- `autofix`: black would reformat it, or only cosmetic E/W codes remain; neutral.
- `clean`: black leaves it as is and no code is reported.
"""

import ast
from dataclasses import dataclass
from functools import lru_cache

import black
import pycodestyle
import pyflakes.checker
from flake8.plugins.pyflakes import FLAKE8_PYFLAKES_CODES

from streams.signals.config import SignalConfig
from streams.signals.syntax import normalise_newlines

STYLE_CLASSES = ("clean", "autofix", "logical", "unparsable")

# Every pyflakes code is logical (unused import F401, redefinition F811, undefined name
# F821, unused local F841, ...). These pycodestyle codes also point at a likely bug:
LOGICAL_PYCODESTYLE_CODES = frozenset(
    {
        "E711",  # comparison to None with ==
        "E712",  # comparison to True/False with ==
        "E713",  # `not x in y`
        "E714",  # `not x is y`
        "E721",  # type comparison with ==
        "E722",  # bare `except:`
        "W605",  # invalid escape sequence in a string
    }
)


def is_logical(code: str) -> bool:
    """Whether a flake8 code marks a logical problem rather than a cosmetic one."""
    return code.startswith("F") or code in LOGICAL_PYCODESTYLE_CODES


@dataclass(frozen=True, slots=True)
class StyleReport:
    style_class: str  # one of STYLE_CLASSES
    codes: list[str]  # sorted distinct flake8 codes
    black_clean: bool  # black.format_str leaves the code unchanged


class _CollectingReport(pycodestyle.BaseReport):
    """Keeps the codes instead of printing them."""

    def init_file(self, *args, **kwargs):
        self.codes: set[str] = set()
        return super().init_file(*args, **kwargs)

    def error(self, line_number, offset, text, check):
        code = super().error(line_number, offset, text, check)
        if code:
            self.codes.add(code)
        return code


@lru_cache(maxsize=8)
def _pycodestyle_guide(
    max_line_length: int, ignore: tuple[str, ...]
) -> pycodestyle.StyleGuide:
    # Built once per setting: option parsing is the slow part of pycodestyle.
    return pycodestyle.StyleGuide(
        quiet=True,
        max_line_length=max_line_length,
        ignore=list(ignore),
        reporter=_CollectingReport,
    )


def pyflakes_codes(tree: ast.Module) -> set[str]:
    checker = pyflakes.checker.Checker(tree, filename="candidate.py")
    return {
        FLAKE8_PYFLAKES_CODES.get(type(m).__name__, "F999") for m in checker.messages
    }


def pycodestyle_codes(code: str, config: SignalConfig) -> set[str]:
    guide = _pycodestyle_guide(config.max_line_length, tuple(config.style_ignore))
    checker = pycodestyle.Checker(
        filename="candidate.py",
        lines=code.splitlines(keepends=True),
        options=guide.options,
    )
    checker.check_all()
    return checker.report.codes


def is_black_clean(code: str) -> bool:
    try:
        return black.format_str(code, mode=black.Mode()) == code
    except black.InvalidInput:
        return False


def check_style(code: str, config: SignalConfig | None = None) -> StyleReport:
    """Classify the candidate's style; see the module docstring for the classes."""
    config = config or SignalConfig()
    code = normalise_newlines(code)
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return StyleReport(style_class="unparsable", codes=[], black_clean=False)
    codes = sorted(pyflakes_codes(tree) | pycodestyle_codes(code, config))
    black_clean = is_black_clean(code)
    if any(is_logical(c) for c in codes):
        style_class = "logical"
    elif codes or not black_clean:
        style_class = "autofix"
    else:
        style_class = "clean"
    return StyleReport(style_class=style_class, codes=codes, black_clean=black_clean)
