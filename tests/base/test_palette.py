"""`base/palette.py`: one colour table for the page, the report and every chart. Its promises:
valid distinct colours where a reader tells things apart by them, verdict colours clear of both
transport hues, keys that match the vocabulary and the parts they colour, and CSS variables
generated from the same table."""

from __future__ import annotations

import re

import pytest

from deepep_calc.base import palette
from deepep_calc.base.quantity import Tag
from deepep_calc.base.vocabulary import VERDICT_CODES

HEX = re.compile(r"#[0-9a-f]{6}")

TABLES = {
    "VERDICT": palette.VERDICT,
    "VERDICT_TEXT": palette.VERDICT_TEXT,
    "TAG": palette.TAG,
    "BREAKDOWN": palette.BREAKDOWN,
    "BOUND": palette.BOUND,
    "REQUEST_TIME": palette.REQUEST_TIME,
    "MEMORY": palette.MEMORY,
}
SINGLES = ["GPU_INITIATED", "HOST_PROXIED", "DENSE", "REPLICA", "MEASURED_MARK"]


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


def _luminance(colour: str) -> float:
    """WCAG relative luminance."""

    def channel(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.03928 else ((s + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in _rgb(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@pytest.mark.parametrize("name", [*TABLES, *SINGLES])
def test_every_colour_is_a_six_digit_lower_case_hex(name: str) -> None:
    value = TABLES.get(name) or getattr(palette, name)
    colours = value.values() if isinstance(value, dict) else [value]
    assert all(HEX.fullmatch(c) for c in colours), (name, colours)


@pytest.mark.parametrize("name", ["VERDICT", "TAG", "BREAKDOWN", "BOUND", "REQUEST_TIME", "MEMORY"])
def test_the_entries_of_one_chart_are_told_apart_by_colour(name: str) -> None:
    colours = list(TABLES[name].values())
    assert len(set(colours)) == len(colours), name


def test_the_four_arm_colours_are_distinct() -> None:
    arms = [palette.GPU_INITIATED, palette.HOST_PROXIED, palette.DENSE, palette.REPLICA]
    assert len(set(arms)) == 4


def test_verdict_colours_avoid_both_transport_hues() -> None:
    assert not set(palette.VERDICT.values()) & {palette.GPU_INITIATED, palette.HOST_PROXIED}


def test_verdict_and_tag_keys_are_the_vocabulary_s() -> None:
    assert set(palette.VERDICT) == set(palette.VERDICT_TEXT) == set(VERDICT_CODES)
    assert set(palette.TAG) == {str(t) for t in Tag}  # how a tag is printed


def test_verdict_text_is_readable_on_its_card() -> None:
    """WCAG AA for normal text is a contrast of 4.5:1; the text colour of each verdict meets it."""
    for code, colour in palette.VERDICT.items():
        assert _contrast(colour, palette.VERDICT_TEXT[code]) >= 4.5, code


def test_the_proxy_part_takes_the_host_proxied_hue() -> None:
    assert palette.BREAKDOWN["proxy"] == palette.BOUND["proxy"] == palette.HOST_PROXIED


@pytest.mark.parametrize(
    ("arm", "host_proxied", "colour"),
    [
        ("deepep", True, palette.HOST_PROXIED),
        ("deepep", False, palette.GPU_INITIATED),
        ("replica", True, palette.REPLICA),
        ("allgather", False, palette.DENSE),
        ("tp", True, palette.DENSE),
    ],
)
def test_an_arm_is_coloured_by_its_path(arm: str, host_proxied: bool, colour: str) -> None:
    assert palette.arm_colour(arm, host_proxied) == colour


def test_css_variables_come_from_the_same_table() -> None:
    css = palette.css_variables()
    assert css["--gpu-initiated"] == palette.GPU_INITIATED and css["--host-proxied"] == palette.HOST_PROXIED
    assert css["--dense"] == palette.DENSE and css["--replica"] == palette.REPLICA
    for code in VERDICT_CODES:
        assert css[f"--verdict-{code}"] == palette.VERDICT[code]
        assert css[f"--verdict-{code}-text"] == palette.VERDICT_TEXT[code]
    for tag, colour in palette.TAG.items():
        assert css[f"--tag-{tag}"] == colour
    assert len(css) == 4 + 2 * len(VERDICT_CODES) + len(palette.TAG)
    assert all(name.startswith("--") and HEX.fullmatch(value) for name, value in css.items())
