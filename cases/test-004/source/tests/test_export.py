import pytest

from tablekit import to_csv, to_html, to_markdown, to_text

ROWS = [
    {"name": "widget", "price": 2.5, "in_stock": True},
    {"name": "gadget", "price": 10.0, "in_stock": False, "note": "back in May"},
]


def test_csv():
    assert to_csv(ROWS) == (
        "name,price,in_stock,note\nwidget,2.5,true,\ngadget,10.0,false,back in May\n"
    )


def test_csv_float_digits():
    assert to_csv(ROWS, ["price"], float_digits=1) == "price\n2.5\n10.0\n"


def test_markdown():
    assert to_markdown(ROWS) == (
        "| name | price | in_stock | note |\n"
        "|---|---|---|---|\n"
        "| widget | 2.50 | yes |  |\n"
        "| gadget | 10.00 | no | back in May |\n"
    )


def test_markdown_escapes_pipes_and_newlines():
    assert to_markdown([{"a": "x|y\nz"}]) == "| a |\n|---|\n| x\\|y<br>z |\n"


def test_html():
    assert to_html([{"a": "<b>", "b": None}], missing="-") == (
        "<table>\n"
        "  <thead>\n"
        "    <tr>\n"
        "      <th>a</th>\n"
        "      <th>b</th>\n"
        "    </tr>\n"
        "  </thead>\n"
        "  <tbody>\n"
        "    <tr>\n"
        "      <td>&lt;b&gt;</td>\n"
        "      <td>-</td>\n"
        "    </tr>\n"
        "  </tbody>\n"
        "</table>\n"
    )


def test_text():
    assert to_text(ROWS, ["name", "price"]) == (
        "name    price\n------  -----\nwidget  2.50\ngadget  10.00\n"
    )


@pytest.mark.parametrize("export", [to_csv, to_markdown, to_html, to_text])
def test_rejects_non_mapping_rows(export):
    with pytest.raises(TypeError, match="row 1"):
        export([{"a": 1}, ["a", 1]])


@pytest.mark.parametrize("export", [to_csv, to_markdown, to_html, to_text])
def test_rejects_duplicate_columns(export):
    with pytest.raises(ValueError):
        export([{"a": 1}], ["a", "a"])
