"""The HTML routes (`web/pages.py`): the calculator rendered server-side (JavaScript off), its
form post and config upload, where an error is shown, the bound chart's place on the page, the
mechanism page's route and the locally served plotly. (What the mechanism page draws is
`test_mechanism.py`'s.)"""

from __future__ import annotations

import io
import re

import pytest
from starlette.datastructures import UploadFile

from deepep_calc.base.errors import CalcError, FileInputError, InputError
from deepep_calc.question.fields import DEFAULTS
from deepep_calc.question.scenario import Scenario
from deepep_calc.web.inputs import request_from_form
from deepep_calc.web.pages import INPUTS, _defaults, _upload_text, calculator_context, mechanism_html, options
from web_fixtures import app, client  # noqa: F401  (fixtures)

from .responses import HF, api_message, clean

# Through the app -------------------------------------------------------------------------------


def test_page_renders_the_result_server_side(client):  # noqa: F811
    resp = clean(client.get("/", params={"model": "kimi-k2"}))
    assert resp.status_code == 200
    html = resp.text
    assert 'class="card card-capacity lit"' in html
    assert html.count(' lit"') == 1
    for section in ("§1", "§2", "§3", "§4", "§5"):
        assert section in html
    assert 'class="tag tag-measured"' in html or 'class="tag tag-derived"' in html
    assert "content-security-policy" in resp.headers


def test_page_field_error_sits_next_to_the_field(client):  # noqa: F811
    resp = clean(client.get("/", params={"concurrency": "-5"}))
    assert resp.status_code == 422
    message = api_message(concurrency=-5)
    assert f'data-error-for="concurrency" role="alert">{message}</p>'.replace("'", "&#39;") in resp.text


def test_form_post_without_javascript(client):  # noqa: F811
    data = {  # GPU-initiated EFA, CUDA graphs, DeepSeek scale, a batch past one node's KV: DeepEP wins
        "model": "deepseek-v3",
        "nodes": "2",
        "engine": "vllm",
        "transport": "efa-gda",
        "concurrency": "1024",
        "isl": "128",
        "osl": "1024",
        "cuda_graphs": "true",
    }
    resp = clean(client.post("/", data=data))
    assert resp.status_code == 200
    assert 'class="card card-deepep lit"' in resp.text
    bad = clean(client.post("/", data={**data, "nodes": "lots"}))
    assert bad.status_code == 422
    assert "nodes: &#39;lots&#39; is not allowed" in bad.text and "--nodes" not in bad.text


def test_form_upload_of_a_config(client):  # noqa: F811
    good = (HF / "mixtral-8x7b" / "config.json").read_bytes()
    resp = clean(
        client.post(
            "/", data={"nodes": "2"}, files={"config_file": ("config.json", good, "application/json")}
        )
    )
    assert resp.status_code == 200
    assert "mistralai/Mixtral-8x7B" in resp.text or "mixtral" in resp.text.lower()
    bad = clean(client.post("/", files={"config_file": ("config.json", b"\xff\xfe{", "application/json")}))
    assert bad.status_code == 422
    assert 'data-error-for="config_json" role="alert">uploaded config.json: is not UTF-8' in bad.text


def test_plotly_is_served_locally(client):  # noqa: F811
    resp = client.get("/static/plotly.min.js")
    assert resp.status_code == 200
    assert "javascript" in resp.headers["content-type"]
    assert len(resp.content) > 1_000_000


def test_an_error_about_an_input_the_page_lacks_sits_above_the_form(client) -> None:  # noqa: F811
    """max_batch has no input on the page (a link may still carry it): its error cannot sit
    beside a field, so it is the form's."""
    resp = clean(client.get("/", params={"max_batch": "0"}))
    assert resp.status_code == 422
    shown = re.search(r'id="form-error" role="alert">([^<]*)<', resp.text)
    assert shown and shown.group(1) == "max_batch: 0 is not allowed; expected a whole number greater than 0"


def test_the_mechanism_route_refuses_a_bad_query_in_one_escaped_line(client) -> None:  # noqa: F811
    resp = clean(client.get("/mechanism", params={"nodes": "<x>"}))
    assert resp.status_code == 422
    assert (
        resp.text
        == "<p>nodes: &#x27;&lt;x&gt;&#x27; is not allowed; expected a whole number greater than 0</p>"
    )
    resp = clean(client.get("/mechanism", params={"disagg": "9P9D", "nodes": "3"}))
    assert resp.status_code == 422 and "18 = P + D for a 9P9D split" in resp.text


# The form's pieces --------------------------------------------------------------------------------


def test_the_form_starts_at_the_default_scenario() -> None:
    """Every default as the text an input holds: a bool lower-case, None blank."""
    shown = _defaults()
    assert (shown["model"], shown["nodes"], shown["concurrency"]) == ("qwen3-30b-a3b-fp8", "2", "32")
    assert shown["cuda_graphs"] == "false" and shown["gpus_per_node"] == "" and shown["slo_tok_s"] == ""
    assert shown["config_text"] == "" and shown["disagg"] == ""
    assert set(shown) == set(DEFAULTS) | {"config_text", "disagg"}
    # read back by the form reader, the defaults are the default scenario
    assert request_from_form(shown).to_scenario() == Scenario()


def test_every_page_input_is_a_field_the_form_reader_takes() -> None:
    fields = set(Scenario.field_names())
    assert INPUTS - fields == {"disagg", "config_json"}  # the split and the upload, read beside the fields
    assert "calibration" not in INPUTS  # the server reads no files


def test_the_mode_choices_mean_what_their_labels_say() -> None:
    choices = options()
    for value, label in choices["graphs"]:
        assert request_from_form({"cuda_graphs": value}).cuda_graphs is (label == "CUDA graphs")
    for value, label in choices["side_graphs"]:
        side = request_from_form({"prefill_cuda_graphs": value}).prefill_cuda_graphs
        assert side is {"as the decode mode": None, "eager": False, "CUDA graphs": True}[label]
    assert [v for v, _ in choices["side_arm"]] == ["", "deepep", "allgather", "tp", "replica"]


@pytest.mark.parametrize(
    ("error", "field_error", "form_error"),
    [
        (
            InputError("--nodes", "x", "a whole number"),
            {"nodes": "nodes: 'x' is not allowed; expected a whole number"},
            "",
        ),
        (
            InputError("--eager", 1, "true or false"),
            {"cuda_graphs": "eager: 1 is not allowed; expected true or false"},
            "",
        ),
        (CalcError("the whole request"), {}, "the whole request"),
        (CalcError("--bogus is unknown", "--bogus"), {}, "bogus is unknown"),
    ],
)
def test_an_error_sits_beside_its_input_or_above_the_form(error, field_error, form_error) -> None:
    ctx = calculator_context({"nodes": "x"}, None, error)
    assert ctx["field_error"] == field_error and ctx["form_error"] == form_error
    assert ctx["values"]["nodes"] == "x" and ctx["values"]["isl"] == "120"  # as typed, defaults elsewhere
    assert ctx["data"] is None


def upload(data: bytes, name: str = "config.json") -> UploadFile:
    return UploadFile(io.BytesIO(data), filename=name)


def test_an_upload_is_read_as_utf8_text() -> None:
    assert _upload_text(None) == "" and _upload_text(upload(b"{}", name="")) == ""  # no file chosen
    assert _upload_text(upload(b'\xef\xbb\xbf{"a": 1}')) == '{"a": 1}'  # a byte-order mark is dropped
    config = (HF / "mixtral-8x7b" / "config.json").read_bytes()
    assert _upload_text(upload(config)) == config.decode("utf-8")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"ab\xffc", "uploaded config.json: is not UTF-8 text (invalid byte at offset 2)"),
        (b" " * (5 * 1024 * 1024 + 1), "uploaded config.json: is larger than 5 MB; refused"),
    ],
)
def test_an_upload_that_is_not_text_or_too_big_is_refused_on_the_config_input(
    data: bytes, message: str
) -> None:
    with pytest.raises(FileInputError) as info:
        _upload_text(upload(data))
    assert info.value.message == message and info.value.field == "config_json"


def test_the_default_mechanism_page_is_drawn_once() -> None:
    """No query: the same page for everyone, cached; a query draws its own."""
    assert mechanism_html(None) is mechanism_html({})


def test_the_page_and_report_draw_it(client) -> None:  # noqa: F811
    details = client.post("/api/details", json={}).json()
    assert "bound" in details["charts"]
    assert 'data-chart="bound"' in client.get("/").text
