"""`base/version.py`: the version profiles and reports record is the one the package installs as."""

from __future__ import annotations

import re
from importlib.metadata import version

import deepep_calc
from deepep_calc.base.version import __version__


def test_the_version_is_the_installed_distribution_s() -> None:
    assert __version__ == version("deepep-calc")


def test_the_version_is_a_release_number() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__), __version__


def test_the_package_reexports_it() -> None:
    """`deepep_calc.__version__` is this one, not a second copy that could drift."""
    assert "__version__" in vars(deepep_calc)
    assert deepep_calc.__version__ is __version__
