"""The parts the HTML pages share (report.html, compare.html): the style, and tables a reader can
sort (click a header) and filter (the selects and the search box above them). The page's state
lives in the address's fragment (`#tier=T1&outcome=fail&sort=runs.cost&dir=desc&open=12`), so a
filtered view is a link that can be shared, and the case × tier matrix links into the run table.
No network, no external files: one self-contained page (but for a report of thousands of runs,
whose run details are loaded from files beside it: html_details.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from typing import Any

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem auto;max-width:1240px;color:#222;
padding:0 1rem}table{border-collapse:collapse;margin:.6rem 0}td,th{border:1px solid #ccc;
padding:.2rem .5rem;text-align:right}th{background:#f3f3f3}td.l,th.l{text-align:left}
table.tool th{cursor:pointer;user-select:none;white-space:nowrap}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
table.tool tbody tr[data-run]{cursor:pointer}table.tool tbody tr:hover{background:#f5f9ff}
tr.sel{outline:2px solid #2563eb}.filters{display:flex;gap:.5rem;flex-wrap:wrap;
align-items:center;margin:.5rem 0}.filters select,.filters input{font:inherit;padding:.1rem .3rem}
.banner{background:#fff3cd;border:2px solid #d39e00;padding:.6rem 1rem;font-weight:bold}
.pass{color:#1a7f37}.fail{color:#b42318}.err{color:#9a6700}.muted{color:#666}
tr.worse td{background:#fdecea}tr.better td{background:#e9f7ef}
.chips a{display:inline-block;border:1px solid #ccc;border-radius:1rem;padding:0 .6rem;
margin:0 .2rem .2rem 0;text-decoration:none}
#detail{border:2px solid #2563eb;padding:.5rem 1rem;margin:.8rem 0}#detail[hidden]{display:none}
details{border:1px solid #ddd;margin:.2rem 0;padding:.2rem .5rem}summary{cursor:pointer}
pre{background:#f7f7f7;padding:.5rem;overflow:auto;max-height:28rem;white-space:pre-wrap}
.wide{overflow-x:auto}img{max-width:100%;border:1px solid #eee;margin:.4rem 0}
.tx .msg{white-space:pre-wrap;margin:.3rem 0;padding:.3rem .5rem;border-left:3px solid #999}
.tx .msg.agent{border-color:#2563eb}.tx .msg.prompt{border-color:#9a6700}
.tx .sub{margin-left:1.2rem;border-left:2px dashed #2563eb;padding-left:.6rem}
.tx code{background:#f3f3f3}
"""

# Filters: every select/search with `data-f=NAME` filters the rows of every tool table that
# carry `data-NAME` (rows without it are left alone); `q` searches a row's text. Sorting:
# `sort=TABLE.COLUMN`, `dir=asc|desc`. `open=N`: run N's detail is shown (template `run-N`, or
# from the file of its chunk beside the page when the details are there: html_details.py).
SCRIPT = """
(function () {
  var RESERVED = ['q', 'sort', 'dir', 'open'];
  var ORDER = new WeakMap();  // each row's place as written: the order when nothing is sorted
  var SORTED = new WeakMap();  // each table's order now ('' as written, else 'INDEX asc|desc')
  function state() {
    var s = {};
    location.hash.slice(1).split('&').forEach(function (kv) {
      if (!kv) return;
      var i = kv.indexOf('=');
      var k = decodeURIComponent(i < 0 ? kv : kv.slice(0, i));
      s[k] = i < 0 ? '' : decodeURIComponent(kv.slice(i + 1));
    });
    return s;
  }
  function write(s) {
    var parts = [];
    Object.keys(s).forEach(function (k) {
      if (s[k] !== '' && s[k] != null)
        parts.push(encodeURIComponent(k) + '=' + encodeURIComponent(s[k]));
    });
    var h = parts.join('&');
    if (h === location.hash.slice(1)) { apply(); return; }
    history.replaceState(null, '', h ? '#' + h : location.pathname + location.search);
    apply();
  }
  function set(k, v) { var s = state(); s[k] = v; write(s); }
  function key(row, index, numeric) {
    var cell = row.cells[index], v = cell ? cell.getAttribute('data-v') : null;
    if (v === null) v = cell ? cell.textContent.trim() : '';
    if (!numeric) return v.toLowerCase();
    return v === '' || isNaN(Number(v)) ? null : Number(v);
  }
  function sortTable(t, s) {
    var spec = (s.sort || '').split('.'), heads = t.tHead.rows[0].cells, index = -1;
    for (var i = 0; i < heads.length; i++) {
      var on = spec[0] === t.id && heads[i].getAttribute('data-k') === spec[1];
      if (on) index = i;
      if (on) heads[i].setAttribute('aria-sort', s.dir === 'desc' ? 'descending' : 'ascending');
      else heads[i].removeAttribute('aria-sort');
    }
    // the rows move only when the order changes: laying out thousands of moved rows takes
    // seconds, and a filter or an opened run changes no order
    var order = index < 0 ? '' : index + (s.dir === 'desc' ? ' desc' : ' asc');
    if (SORTED.get(t) === order) return;
    SORTED.set(t, order);
    var body = t.tBodies[0], before = Array.prototype.slice.call(body.rows);
    var numeric = index >= 0 && heads[index].getAttribute('data-t') === 'num';
    var sign = s.dir === 'desc' ? -1 : 1;
    var rows = before.slice().sort(function (a, b) {
      if (index >= 0) {
        var x = key(a, index, numeric), y = key(b, index, numeric);
        if (x === null && y !== null) return 1;   // missing values last, either way
        if (y === null && x !== null) return -1;
        if (x < y) return -sign;
        if (x > y) return sign;
      }
      return ORDER.get(a) - ORDER.get(b);
    });
    if (rows.every(function (r, i) { return r === before[i]; })) return;
    var moved = document.createDocumentFragment();
    rows.forEach(function (r) { moved.appendChild(r); });
    body.appendChild(moved);
  }
  function filterTable(t, s) {
    var q = (s.q || '').toLowerCase(), shown = 0, rows = t.tBodies[0].rows;
    for (var i = 0; i < rows.length; i++) {
      var r = rows[i], ok = !q || r.textContent.toLowerCase().indexOf(q) >= 0;
      Object.keys(s).forEach(function (k) {
        if (RESERVED.indexOf(k) >= 0 || s[k] === '') return;
        var v = r.getAttribute('data-' + k);
        if (v !== null && v !== s[k]) ok = false;
      });
      r.hidden = !ok;
      if (ok) shown++;
      r.classList.toggle('sel', s.open !== undefined && r.getAttribute('data-run') === s.open);
    }
    var count = document.getElementById(t.id + '-count');
    if (count) count.textContent = shown + ' of ' + rows.length + ' shown';
  }
  // Run details beside the page (#detail's data-src and data-per, see html_details.py): run N
  // is in the file data-src + N's chunk number (4 digits) + '.js', a script calling
  // scyllaRuns({"N": "<its HTML>", ...}); only the runs of a chunk this page asked for are
  // taken, and only as strings.
  var details = {}, chunks = {};  // run -> its HTML; chunk -> 'loading', 'loaded' or 'failed'
  function perChunk() {
    var pane = document.getElementById('detail');
    return pane ? Number(pane.getAttribute('data-per')) : 0;
  }
  window.scyllaRuns = function (given) {
    var per = perChunk();
    Object.keys(given).forEach(function (n) {
      if (per && /^\\d+$/.test(n) && chunks[Math.floor(n / per)] === 'loading' &&
          typeof given[n] === 'string' && document.querySelector('tr[data-run="' + n + '"]'))
        details[n] = given[n];
    });
  };
  function load(pane, chunk) {
    var name = String(chunk);
    while (name.length < 4) name = '0' + name;
    var tag = document.createElement('script');
    chunks[chunk] = 'loading';
    tag.onload = function () { chunks[chunk] = 'loaded'; openRun(state()); };
    tag.onerror = function () { chunks[chunk] = 'failed'; openRun(state()); };
    tag.src = pane.getAttribute('data-src') + name + '.js';
    document.head.appendChild(tag);
  }
  // Run n's details: its template, else its HTML from a loaded chunk (put into an inert
  // template first, as the page's own templates are), else null while its chunk loads, else
  // a message; undefined when the page has no run n.
  function runContent(pane, n) {
    var t = document.getElementById('run-' + n), per = perChunk();
    if (t) return t.content.cloneNode(true);
    if (!per || !/^\\d+$/.test(n) || !document.querySelector('tr[data-run="' + n + '"]')) return;
    if (Object.prototype.hasOwnProperty.call(details, n)) {
      var holder = document.createElement('template');
      holder.innerHTML = details[n];
      return holder.content;
    }
    var chunk = Math.floor(n / per);
    if (chunks[chunk] === undefined) load(pane, chunk);
    if (chunks[chunk] === 'loading') return null;
    var missing = document.createElement('p');
    missing.className = 'fail';
    missing.id = 'detail-missing';
    missing.textContent = pane.getAttribute('data-missing');
    return missing;
  }
  function openRun(s) {
    var pane = document.getElementById('detail');
    if (!pane) return;
    if (s.open !== undefined && pane.getAttribute('data-run') === s.open && !pane.hidden) return;
    var content = s.open === undefined ? undefined : runContent(pane, s.open);
    if (content === undefined) { pane.hidden = true; pane.innerHTML = ''; return; }
    pane.innerHTML = '';
    var close = document.createElement('button');
    close.textContent = 'close';
    close.id = 'detail-close';
    close.addEventListener('click', function () { set('open', ''); });
    pane.appendChild(close);
    if (content === null) pane.appendChild(document.createTextNode(' loading the run…'));
    else pane.appendChild(content);
    pane.setAttribute('data-run', content === null ? '' : s.open);
    pane.hidden = false;
    pane.scrollIntoView();
  }
  function apply() {
    var s = state();
    document.querySelectorAll('[data-f]').forEach(function (c) {
      c.value = s[c.getAttribute('data-f')] || '';
    });
    document.querySelectorAll('table.tool').forEach(function (t) {
      sortTable(t, s);
      filterTable(t, s);
    });
    openRun(s);
  }
  document.querySelectorAll('[data-f]').forEach(function (c) {
    c.addEventListener(c.tagName === 'INPUT' ? 'input' : 'change', function () {
      set(c.getAttribute('data-f'), c.value);
    });
  });
  document.querySelectorAll('table.tool').forEach(function (t) {
    Array.prototype.forEach.call(t.tBodies[0].rows, function (r, i) { ORDER.set(r, i); });
    Array.prototype.forEach.call(t.tHead.rows[0].cells, function (th) {
      th.addEventListener('click', function () {
        var s = state(), name = t.id + '.' + th.getAttribute('data-k');
        s.dir = s.sort === name && s.dir !== 'desc' ? 'desc' : 'asc';
        s.sort = name;
        write(s);
      });
    });
    t.tBodies[0].addEventListener('click', function (e) {
      var row = e.target.closest('tr[data-run]');
      if (!row) return;
      e.preventDefault();  // the run's link too: open it, keeping the filters and the order
      set('open', row.getAttribute('data-run'));
    });
  });
  window.addEventListener('hashchange', apply);
  apply();
})();
"""


@dataclass
class Column:
    key: str
    label: str
    numeric: bool = False


@dataclass
class Row:
    """A table row: `cells` maps a column to its HTML (already escaped) and, for sorting, a
    value (`None`: sorted by its text); `attrs` are the row's filter values."""

    cells: dict[str, tuple[str, Any]]
    attrs: dict[str, str] = field(default_factory=dict)
    css: str = ""
    run: int | None = None


def fmt(value: Any, digits: int = 3) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, float):
        return "∞" if math.isinf(value) else f"{value:.{digits}f}"
    return escape(str(value))


def cell(value: Any, digits: int = 3) -> tuple[str, Any]:
    """A cell showing `value`, sorted by it (∞ sorts as the largest number)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return fmt(value, digits), None
    return fmt(value, digits), "Infinity" if math.isinf(value) else repr(value)


def tool_table(table_id: str, columns: list[Column], rows: list[Row]) -> str:
    """A sortable, filterable table (see SCRIPT). Lean, as a run table can have tens of
    thousands of rows: the cells' end tags are left out (HTML closes them) and the columns of
    text are aligned left by the table's own style rule, not a class on each cell."""
    head = "".join(
        f"<th data-k={c.key}{' data-t=num' if c.numeric else ' class=l'}>{escape(c.label)}</th>"
        for c in columns
    )
    left = ",".join(
        f"#{table_id} td:nth-child({i})" for i, c in enumerate(columns, 1) if not c.numeric
    )
    body = []
    for row in rows:
        attrs = "".join(f' data-{k}="{escape(v)}"' for k, v in row.attrs.items())
        if row.run is not None:
            attrs += f" data-run={row.run}"
        css = f" class={row.css}" if row.css else ""
        cells = []
        for c in columns:
            shown, value = row.cells.get(c.key, ("-", None))
            sort = "" if value is None else f' data-v="{escape(str(value))}"'
            cells.append(f"<td{sort}>{shown}")
        body.append(f"<tr{attrs}{css}>{''.join(cells)}")
    return (
        (f"<style>{left}{{text-align:left}}</style>" if left else "")
        + f"<table class=tool id={table_id}><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table>"
    )


def filters(table_id: str, selects: dict[str, tuple[str, list[str]]]) -> str:
    """The controls above a tool table: one select per filter (`name: (label, values)`), a
    search box, and how many rows are shown."""
    parts = []
    for name, (label, values) in selects.items():
        options = "".join(f'<option value="{escape(v)}">{escape(v)}</option>' for v in values)
        parts.append(
            f'<label>{escape(label)} <select data-f={name}><option value="">all'
            f"</option>{options}</select></label>"
        )
    parts.append("<label>search <input type=search data-f=q></label>")
    parts.append(f"<span class=muted id={table_id}-count></span>")
    return f"<div class=filters>{''.join(parts)}</div>"


HEADERS = {
    "n": "runs",
    "pass_rate": "pass rate [95% CI]",
    "mean_score": "score",
    "median_score": "median score",
    "modal_grade": "grade",
    "mean_cost": "cost/run",
    "cop": "Cost-of-Pass",
    "cop_ci": "CoP 95% CI",
    "frontier_tier": "frontier",
    "frontier_cop": "frontier CoP",
    "mean_tokens": "tokens/run",
    "mean_agent_seconds": "agent s/run",
    "reward_hacks": "hacks",
    "reward_hacking_rate": "hacking rate",
    "warning": "note",
    "agent_model": "model",
}


def static_table(rows: list[dict[str, Any]], columns: list[str], left: tuple[str, ...] = ()) -> str:
    """A static table with readable headers; a pass rate carries its interval in its cell (the
    interval's method in the header's tooltip), so the table stays narrow."""
    methods = sorted({str(r["ci_method"]) for r in rows if r.get("ci_method")})
    tip = f" title='interval: {escape(', '.join(methods))}'" if methods else ""
    head = "".join(
        f"<th{' class=l' if c in left else ''}{tip if c == 'pass_rate' else ''}>"
        f"{escape(HEADERS.get(c, c.replace('_', ' ')))}"
        for c in columns
    )
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=l' if c in left else ''}>{_static_cell(r, c)}" for c in columns)
        for r in rows
    )
    return f"<table><tr>{head}{body}</table>"


def _static_cell(row: dict[str, Any], column: str) -> str:
    """A static table's cell: a pass rate with its interval, any other value formatted."""
    value = row.get(column)
    if column == "pass_rate" and isinstance(value, int | float):
        low, high = row.get("ci_low"), row.get("ci_high")
        ci = (
            f" [{low:.0%}, {high:.0%}]"
            if isinstance(low, int | float) and isinstance(high, int | float)
            else ""
        )
        return f"{value:.0%}{ci}" if row.get("n") else "no counted runs"
    return fmt(value)


def page_start(title: str) -> str:
    """A page up to its body's first part."""
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
    )


PAGE_END = f"<script>{SCRIPT}</script></body></html>\n"  # after the body's last part


def page(title: str, body: list[str]) -> str:
    return page_start(title) + "".join(body) + PAGE_END
