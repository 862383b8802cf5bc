"""Batch reports: run the notebooks with papermill, export HTML, build ``reports/index.html``.

``ett report [NOTEBOOK ...] [-p NAME VALUE ...] [--trace PATH] [--out DIR]``

* Notebooks are ``notebooks/NN-name.ipynb``; a NOTEBOOK argument may be the
  number (``01``), the name (``trace-overview``), the stem or a path.
* They run in parallel (``--jobs``, default: the number of CPUs, at most the
  number of notebooks), each in its own kernel, with a progress bar on stderr.
* ``-p NAME VALUE`` sets a parameter of every selected notebook that declares it
  (converted to the type of its default); ``--trace PATH`` sets ``trace``.  A
  parameter no selected notebook declares is an error (exit status 2).
* Each notebook gets ``output_dir`` = the output folder, where it saves its
  scorecard (``<stem>.scorecard.json``, see :mod:`ettcore.present.scorecard`).
* Outputs in ``--out`` (default ``reports/``): the executed notebook
  ``<stem>.ipynb``, ``<stem>.html`` without code cells, ``scorecard.json`` (the
  combined scorecard) and ``index.html``.  Pages load nothing from the network:
  the Vega, Vega-Lite and vega-embed JavaScript (from ``vl-convert-python``) is
  embedded in each page, and charts are drawn from the specs in the page.

``ett report --update-notebooks`` re-executes the committed notebooks in place
with their default parameters and writes them in canonical form
(:func:`canonical`: no papermill or timing metadata), which is what the
repository holds and what the tests compare against.
"""

from __future__ import annotations

import html
import json
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from ettcore.atomic import write_text
from ettcore.config import GENERATED_DIR, NOTEBOOK_DIR
from ettcore.errors import InputError, Problem
from ettcore.present.scorecard import SCORECARD_SUFFIX, combine, load_cards

if TYPE_CHECKING:  # nbformat is imported where notebooks are read (the CLI starts without it)
    import nbformat

KERNEL_NAME = "python3"
VEGALITE_MIMETYPE = "application/vnd.vegalite.v5+json"
VL_VERSION = "v5.21"
OUTPUT_DIR_PARAM = "output_dir"
TRACE_PARAM = "trace"
NOTEBOOK_GLOB = "[0-9][0-9]-*.ipynb"
CANONICAL_KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": KERNEL_NAME}


# ----------------------------------------------------------------------------- notebooks and parameters


def discover(directory: Path = NOTEBOOK_DIR) -> list[Path]:
    """The suite's notebooks, in number order."""
    return sorted(directory.glob(NOTEBOOK_GLOB))


def resolve(names: Sequence[str], directory: Path = NOTEBOOK_DIR) -> list[Path]:
    """Notebooks named by number, name, stem or path (all of them when ``names`` is empty)."""
    available = discover(directory)
    if not names:
        return available
    out: list[Path] = []
    for name in names:
        p = Path(name)
        if p.suffix == ".ipynb" and p.exists():
            out.append(p.resolve())
            continue
        hits = [nb for nb in available if name in (nb.stem, nb.stem[:2], nb.stem[3:])]
        if len(hits) != 1:
            choices = ", ".join(nb.stem for nb in available)
            raise InputError(
                Problem("ett report", None, "NOTEBOOK", f"unknown notebook {name!r}; choose from: {choices}")
            )
        out.append(hits[0])
    return list(dict.fromkeys(out))


def parameters_of(path: Path) -> dict[str, dict]:
    """The notebook's papermill parameters: name -> {inferred_type_name, default, help}."""
    import papermill

    return papermill.inspect_notebook(str(path))


def coerce(value: str, type_name: str, name: str) -> Any:
    """Convert a ``-p`` value to the declared type of the parameter."""
    t = (type_name or "").lower()
    try:
        if t == "int":
            return int(value)
        if t == "float":
            return float(value)
        if t == "bool":
            low = value.strip().lower()
            if low not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return low in ("true", "1", "yes")
        return value
    except ValueError:
        raise InputError(Problem("-p", None, name, f"value {value!r} is not a valid {t}")) from None


def plan_parameters(
    notebooks: Sequence[Path], pairs: Sequence[tuple[str, str]], trace: str | None, out_dir: Path
) -> dict[Path, dict[str, Any]]:
    """Parameters for each notebook: ``output_dir`` always, ``trace`` and ``-p`` pairs where declared."""
    given = list(pairs) + ([(TRACE_PARAM, str(Path(trace).resolve()))] if trace else [])
    plan: dict[Path, dict[str, Any]] = {}
    used: set[str] = set()
    for nb in notebooks:
        declared = parameters_of(nb)
        params: dict[str, Any] = {}
        if OUTPUT_DIR_PARAM in declared:
            params[OUTPUT_DIR_PARAM] = str(out_dir)
        for name, value in given:
            if name in declared:
                params[name] = coerce(value, declared[name].get("inferred_type_name", "str"), name)
                used.add(name)
        plan[nb] = params
    unknown = [name for name, _ in given if name not in used]
    if unknown:
        raise InputError(
            [
                Problem("-p" if n != TRACE_PARAM else "--trace", None, n, "no selected notebook has this parameter")
                for n in dict.fromkeys(unknown)
            ]
        )
    return plan


# ----------------------------------------------------------------------------- canonical form


def canonical(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook without volatile metadata: papermill's times and parameters, cell timings, kernel version.

    Also drops a papermill ``injected-parameters`` cell, so a report run and a
    default run of the same notebook compare equal when the injected values do
    not change any output (``output_dir`` only decides where files go).
    """
    import nbformat  # imported here: it costs ~2 s at start-up of every `ett` command
    from nbconvert.preprocessors import CoalesceStreamsPreprocessor

    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    nb.metadata.pop("papermill", None)
    nb.metadata.pop("widgets", None)
    nb.metadata["kernelspec"] = dict(CANONICAL_KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    cells = []
    count = 0
    for cell in nb.cells:
        tags = cell.metadata.get("tags", [])
        if "injected-parameters" in tags:
            continue
        for key in ("papermill", "execution", "collapsed", "scrolled", "jupyter"):
            cell.metadata.pop(key, None)
        cell.pop("id", None)
        if cell.cell_type == "code":
            count += 1
            cell.execution_count = count
            for out in cell.get("outputs", []):
                if "execution_count" in out:
                    out["execution_count"] = count
                out.get("metadata", {}).pop("papermill", None)
            # consecutive writes to one stream as one output: how the kernel batched a cell's prints is not its output
            CoalesceStreamsPreprocessor().preprocess_cell(cell, {}, count)
        cells.append(cell)
    nb.cells = cells
    nb.nbformat, nb.nbformat_minor = 4, 4
    return nb


def dumps(nb: nbformat.NotebookNode) -> str:
    """Serialise a notebook as committed (nbformat 4.4, no cell ids, sorted keys, one trailing newline)."""
    d = json.loads(json.dumps(nb))
    for c in d["cells"]:
        c.pop("id", None)
    return json.dumps(d, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


# ----------------------------------------------------------------------------- execution and HTML


@lru_cache(maxsize=1)
def vega_bundle() -> str:
    """Vega, Vega-Lite v5 and vega-embed as one script that defines ``window.vegaEmbed`` (no network).

    Bundling takes seconds, so the script is cached in ``data/generated/`` (git-ignored),
    keyed by the vl-convert version.
    """
    import vl_convert

    cache = GENERATED_DIR / f".vega-embed-{VL_VERSION}-vlconvert-{vl_convert.__version__}.js"
    if cache.exists():
        return cache.read_text(encoding="utf-8")
    js = vl_convert.javascript_bundle(vl_version=VL_VERSION).replace("</script", "<\\/script")
    write_text(cache, js)
    return js


_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block extra_css -%}
<script type="text/javascript">
{{ resources.ett_vega_js }}
</script>
<style type="text/css">{{ resources.ett_css }}</style>
{%- endblock extra_css -%}
{%- block body_header -%}
{{ super() }}
{{ resources.ett_header }}
{%- endblock body_header -%}
{%- block body_footer -%}
{{ resources.ett_footer }}
{{ super() }}
{%- endblock body_footer -%}
"""

PAGE_CSS = """
.ett-chart { margin: 0.5em 0; }
.ett-banner { padding: 0.5em 0.9em; margin: 0 0 0.6em 0; border-radius: 3px; font-family: sans-serif; font-size: 14px; }
.ett-banner.synthetic { background: #fff3cd; border: 1px solid #e0c36a; }
.ett-banner.real { background: #e3f1df; border: 1px solid #8fbf7f; }
.ett-banner.published { background: #e8e4f3; border: 1px solid #a99bd1; }
.ett-nav { display: flex; justify-content: space-between; gap: 1em; font-family: sans-serif; font-size: 14px;
           padding: 0.4em 0; margin: 0 0 0.4em 0; border-bottom: 1px solid #ddd; }
.ett-nav.bottom { border-bottom: none; border-top: 1px solid #ddd; margin-top: 1.5em; }
.ett-nav a { text-decoration: none; color: #1f5fa8; } .ett-nav a:hover { text-decoration: underline; }
.ett-nav .ett-nav-index { font-weight: bold; }
body .jp-OutputArea-output pre { word-break: normal; overflow-wrap: anywhere; }  /* wrap at spaces, not inside words */
"""


@dataclass(frozen=True)
class PageInfo:
    """What the page chrome says: the title, the data class and the neighbours in the suite."""

    title: str
    synthetic: bool | None = None
    trace: str = ""
    prev: tuple[str, str] | None = None  # (stem, title)
    next: tuple[str, str] | None = None


def notebook_title(path: Path) -> str:
    """The first Markdown heading of a notebook (its title), else its file name."""
    nb = json.loads(Path(path).read_text(encoding="utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            src = "".join(cell.get("source", ""))
            for line in src.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip()
    return Path(path).stem


def neighbours(notebooks: Sequence[Path]) -> dict[str, dict[str, tuple[str, str] | None]]:
    """Previous and next report of each notebook, in the order of the run (the suite's number order)."""
    titled = [(nb.stem, notebook_title(nb)) for nb in notebooks]
    return {
        stem: {"prev": titled[i - 1] if i > 0 else None, "next": titled[i + 1] if i + 1 < len(titled) else None}
        for i, (stem, _) in enumerate(titled)
    }


def banner_html(synthetic: bool | None, trace: str = "") -> str:
    """The data banner at the top of a page: SYNTHETIC, REAL, or PUBLISHED figures (nothing when unknown)."""
    from ettcore.present.scorecard import PUBLISHED_INPUTS

    e = html.escape
    where = f" Trace: <code>{e(trace)}</code>." if trace else ""
    if synthetic is None:
        return ""
    if trace == PUBLISHED_INPUTS:
        return (
            '<div class="ett-banner published" id="ett-banner"><b>PUBLISHED figures</b>: no trace; the project\'s '
            "model on numbers other publications report (<code>data/reference/external-figures.csv</code>), with "
            "stated assumptions.</div>"
        )
    if synthetic:
        return (
            '<div class="ett-banner synthetic" id="ett-banner"><b>SYNTHETIC data</b>: computed on generated traces or '
            "assumed models calibrated to the paper's published numbers (arXiv 2610.02057), not on measured jobs."
            f"{where}</div>"
        )
    return f'<div class="ett-banner real" id="ett-banner"><b>REAL data</b>: measured runs.{where}</div>'


def nav_html(info: PageInfo, where: str = "top") -> str:
    """Links to the index and to the previous and next report."""
    e = html.escape
    prev = (
        f'<a class="ett-nav-prev" rel="prev" href="{e(info.prev[0])}.html">&larr; '
        f"{e(info.prev[0][:2])} {e(info.prev[1])}</a>"
        if info.prev
        else "<span></span>"
    )
    nxt = (
        f'<a class="ett-nav-next" rel="next" href="{e(info.next[0])}.html">{e(info.next[0][:2])} {e(info.next[1])} '
        "&rarr;</a>"
        if info.next
        else "<span></span>"
    )
    return (
        f'<nav class="ett-nav {where}">{prev}<a class="ett-nav-index" href="index.html">All reports and the '
        f"scorecard</a>{nxt}</nav>"
    )


def _embed_html(spec: dict, div_id: str) -> str:
    data = json.dumps(spec, sort_keys=True).replace("</", "<\\/")
    return (
        f'<div class="ett-chart" id="{div_id}"></div>\n<script type="text/javascript">'
        f'vegaEmbed("#{div_id}", {data}, {{"actions": false, "renderer": "svg"}})'
        f'.catch(function(e) {{ document.getElementById("{div_id}").innerText = "chart error: " + e; }});</script>'
    )


def charts_to_html(nb: nbformat.NotebookNode) -> int:
    """Replace every Vega-Lite output by an inline ``vegaEmbed`` call; returns the number of charts."""
    n = 0
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if VEGALITE_MIMETYPE in data:
                n += 1
                out["data"] = {"text/html": _embed_html(data[VEGALITE_MIMETYPE], f"ett-chart-{n}")}
    return n


def export_html(nb: nbformat.NotebookNode, target: Path, info: PageInfo | None = None) -> int:
    """Write ``target`` as HTML without code cells, with the page chrome of ``info``; returns the number of charts."""
    import jinja2
    import nbformat  # imported here: it costs ~2 s at start-up of every `ett` command
    from nbconvert import HTMLExporter

    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    n = charts_to_html(nb)
    exporter = HTMLExporter(
        template_name="lab",
        extra_loaders=[jinja2.DictLoader({"ett_report.html.j2": _TEMPLATE})],
        template_file="ett_report.html.j2",
    )
    exporter.exclude_input = True
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    info = info or PageInfo(target.stem)
    header = nav_html(info, "top") + banner_html(info.synthetic, info.trace)
    resources = {
        "ett_vega_js": vega_bundle(),
        "ett_css": PAGE_CSS,
        "ett_header": header,
        "ett_footer": nav_html(info, "bottom"),
        "metadata": {"name": f"{info.title} - ETT% reports"},
    }
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    write_text(target, body)
    return n


@lru_cache(maxsize=1)
def _kernel_folder() -> str:
    """A private temporary folder for this process's kernel sockets, removed at exit."""
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="ett-kernels-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _ipc_kernel_manager():
    """A kernel manager on IPC transport (Unix sockets in a private temporary folder) instead of TCP on localhost.

    Recent ipykernel warns on the terminal that a TCP kernel is unencrypted; a report run has no use for TCP, so
    its kernels talk over IPC and nothing reaches the terminal.  jupyter_client interrupts a kernel before every
    shutdown; after a finished run that SIGINT can land in one of the kernel's message handlers, which then logs
    "KeyboardInterrupt caught in kernel." on the terminal.  The shutdown request alone ends an idle kernel (and
    one that ignores it is still killed), so the interrupt is skipped while shutting down; an interrupt asked for
    at any other time (a cell past its timeout) is sent as before.
    """
    from jupyter_client.manager import KernelManager

    class IPCKernelManager(KernelManager):
        def __init__(self, **kwargs):
            kwargs.setdefault("transport", "ipc")
            kwargs.setdefault("ip", os.path.join(_kernel_folder(), "kernel"))
            super().__init__(**kwargs)

        async def _async_interrupt_kernel(self) -> None:
            if not self.shutting_down:
                await super()._async_interrupt_kernel()

    return IPCKernelManager


def execute(source: Path, target: Path, params: dict[str, Any] | None = None) -> None:
    """Run a notebook with papermill into ``target`` (kernel over IPC, no progress bar, no log on the terminal)."""
    import papermill

    papermill.execute_notebook(
        str(source),
        str(target),
        parameters=params or {},
        kernel_name=KERNEL_NAME,
        cwd=str(NOTEBOOK_DIR),
        progress_bar=False,
        log_output=False,
        kernel_manager_class=_ipc_kernel_manager(),
    )


@dataclass
class Result:
    """What one notebook run produced."""

    notebook: str
    ok: bool
    seconds: float
    charts: int = 0
    error: str = ""
    files: list[str] = field(default_factory=list)


def page_info(nb_path: Path, out: Path, nav: dict | None) -> PageInfo:
    """The page chrome of a report: title and data class from the notebook's saved scorecard,
    neighbours from ``nav``."""
    card_path = out / f"{nb_path.stem}{SCORECARD_SUFFIX}"
    card = json.loads(card_path.read_text(encoding="utf-8")) if card_path.exists() else {}
    title = f"{nb_path.stem[:2]} {notebook_title(nb_path)}"
    nav = nav or {}
    return PageInfo(title, card.get("synthetic"), card.get("trace", ""), nav.get("prev"), nav.get("next"))


def run_one(path: str, out_dir: str, params: dict[str, Any], html: bool = True, nav: dict | None = None) -> Result:
    """Execute one notebook with papermill into ``out_dir`` and export its HTML (runs in a worker process)."""
    import nbformat  # imported here: it costs ~2 s at start-up of every `ett` command

    nb_path, out = Path(path), Path(out_dir)
    stem = nb_path.stem
    t = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    executed = out / f"{stem}.ipynb"
    # papermill saves after every cell: run under a hidden temporary name and rename only when the run succeeded,
    # so an interrupted or failed run never leaves a half-executed notebook under the final name
    partial = out / f".tmp-{stem}-{os.getpid()}.ipynb"
    try:
        execute(nb_path, partial, params)
    except Exception as exc:  # papermill raises PapermillExecutionError with the cell's error
        msg = str(exc).strip().splitlines()
        failed = out / f"{stem}.failed.ipynb"
        if partial.exists():
            os.replace(partial, failed)
        executed.unlink(missing_ok=True)
        return Result(stem, False, time.perf_counter() - t, error=" ".join(msg[-3:])[:500], files=[failed.name])
    os.replace(partial, executed)
    if not html:
        return Result(stem, True, time.perf_counter() - t, files=[executed.name])
    nb = nbformat.read(executed, as_version=4)
    charts = export_html(nb, out / f"{stem}.html", page_info(nb_path, out, nav))
    return Result(stem, True, time.perf_counter() - t, charts, files=[executed.name, f"{stem}.html"])


def _worker_context():
    """Workers are spawned, not forked: a fork of a process whose threads (Polars, DuckDB, a test runner's) hold a
    lock can hang forever in the child, which a long test run showed."""
    import multiprocessing

    return multiprocessing.get_context("spawn")


def run_all(
    notebooks: Sequence[Path], plan: dict[Path, dict[str, Any]], out_dir: Path, jobs: int, progress: bool = True
) -> list[Result]:
    """Run the notebooks in ``jobs`` worker processes, with a progress bar; results in notebook order."""
    from tqdm import tqdm

    out_dir.mkdir(parents=True, exist_ok=True)
    vega_bundle()  # build (or read) the cached script once, before the workers start
    results: dict[str, Result] = {}
    nav = neighbours(notebooks)
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=_worker_context()) as pool:
        futures = {pool.submit(run_one, str(nb), str(out_dir), plan[nb], True, nav[nb.stem]): nb for nb in notebooks}
        with tqdm(total=len(futures), unit="notebook", desc="ett report", file=sys.stderr, disable=not progress) as bar:
            for fut in as_completed(futures):
                nb = futures[fut]
                try:
                    res = fut.result()
                except Exception as exc:  # a worker that died
                    res = Result(nb.stem, False, 0.0, error=f"{type(exc).__name__}: {exc}")
                results[nb.stem] = res
                bar.set_postfix_str(f"{nb.stem} {'ok' if res.ok else 'FAILED'}")
                bar.update(1)
    return [results[nb.stem] for nb in notebooks]


# ----------------------------------------------------------------------------- index


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.4g}" if abs(v) < 1e4 else f"{v:,.0f}"
    return str(v)


def _md(text: str) -> str:
    """Text safe inside a Markdown table cell (no markup taken from data)."""
    return (
        html.escape(str(text)).replace("|", "&#124;").replace("*", "&#42;").replace("_", "&#95;").replace("[", "&#91;")
    )


def _evidence_counts(checks: Sequence[dict]) -> str:
    from ettcore.present.scorecard import EVIDENCE

    if not checks:
        return "headline figures only"
    n = {k: sum(c["evidence"] == k for c in checks) for k in EVIDENCE}
    passed = sum(c["passed"] for c in checks)
    by = ", ".join(f"{v} {k}" for k, v in n.items() if v)
    findings = sum(c.get("comparison", False) and not c["passed"] for c in checks)
    return f"{passed}/{len(checks)} checks pass ({by})" + (
        f"; {findings} comparison{'s' if findings > 1 else ''} FAIL (a finding, kept)" if findings else ""
    )


def index_html(results: Sequence[Result], cards: Sequence[dict], board: dict, wall_s: float) -> str:
    """The report index: evidence counts, a chart of published versus ettcore values, the reports and the scorecard."""
    import polars as pl

    from ettcore.present import charts
    from ettcore.present.scorecard import COUNTED_EVIDENCE, EVIDENCE, PUBLISHED_INPUTS, published, result_text
    from ettcore.present.tables import table

    e = html.escape
    by_nb = {c["notebook"]: c for c in cards}
    rows = []
    for r in results:
        card = by_nb.get(r.notebook, {})
        title = (
            notebook_title(NOTEBOOK_DIR / f"{r.notebook}.ipynb")
            if (NOTEBOOK_DIR / f"{r.notebook}.ipynb").exists()
            else (card.get("title") or r.notebook)
        )
        link = (
            f"[{_md(r.notebook[:2] + ' ' + title)}]({r.notebook}.html)"
            if r.ok
            else f"**FAILED** {_md(r.notebook)} ([executed notebook]({r.notebook}.failed.ipynb)): {_md(r.error)}"
        )
        data = (
            "SYNTHETIC"
            if card.get("synthetic")
            else "PUBLISHED"
            if card.get("trace") == PUBLISHED_INPUTS
            else ("REAL" if card else "")
        )
        heads = "; ".join(
            f"{h['label']}: **{_md(_fmt(h['value']))}** {_md(h.get('unit', ''))}".rstrip()
            for h in card.get("headlines", [])
        )
        rows.append(
            {
                "report": link,
                "data": data,
                "scorecard": _evidence_counts(card.get("checks", [])),
                "headline_figures": heads,
            }
        )
    reports = table(
        pl.DataFrame(
            rows, schema={"report": pl.String, "data": pl.String, "scorecard": pl.String, "headline_figures": pl.String}
        ),
        markdown=["report", "headline_figures"],
        title="Reports",
    ).html()
    detail = board["detail"]
    sections = []
    for k in EVIDENCE:
        cs = [c for c in detail if c["evidence"] == k]
        if not cs:
            continue
        f = pl.DataFrame(
            [
                {
                    "id": c["id"],
                    "part": c["part"],
                    "source": c["source"],
                    "quantity": c["quantity"],
                    "published": f"{c['published']} {c['unit']}".strip(),
                    "ettcore_value": c["reproduced"],
                    "tolerance": c["tolerance"],
                    "result": result_text(c["passed"], c.get("comparison", False)),
                    "holds_over": c.get("holds_over", ""),
                    "report": f"[{_md(c['notebook'])}]({c['notebook']}.html)",
                    "basis": c["basis"],
                }
                for c in cs
            ]
        )
        if not any(c.get("holds_over") for c in cs):
            f = f.drop("holds_over")
        head = {
            "measured": "Measured on real runs",
            "calibrated": "Calibrated consistency checks (SYNTHETIC traces)",
            "analytic": "Analytic: formulas on published inputs",
            "external": "External model checks: the project's model on other publications' inputs",
            "identity": "Identities: arithmetic of other published figures (no evidence, counted in no class)",
        }[k]
        sections.append(
            f'<h3 id="evidence-{k}">{e(head)}: {len(cs)} checks</h3>'
            + table(
                f,
                labels={"ettcore_value": "ettcore value", "holds_over": "holds over"},
                decimals={"ettcore_value": 3, "tolerance": 2},
                markdown=["report"],
                notes=[f"{k}: {EVIDENCE[k]}."]
                + ([board["comparison_meaning"]] if any(c.get("comparison") for c in cs) else [])
                + ([board["holds_over_meaning"]] if any(c.get("holds_over") for c in cs) else []),
            ).html()
        )
    if not any(c["evidence"] == "measured" for c in detail):
        real = ", ".join(c["notebook"] for c in cards if not c.get("synthetic"))
        sections.insert(
            0,
            '<h3 id="evidence-measured">Measured on real runs: 0 checks</h3><p>No published figure is '
            f"checked on real runs yet: the reports on real data ({e(real or 'none')}) show measured headline "
            "figures of their own runs, which the paper does not publish.</p>",
        )
    missing = table(
        pl.DataFrame(
            [
                {
                    "id": m["id"],
                    "source": m["source"],
                    "quantity": m["quantity"],
                    "published": f"{m['published']} {m['unit']}".strip(),
                    "why_not": m["reason"],
                }
                for m in board["not_reproduced"]
            ],
            schema={
                "id": pl.String,
                "source": pl.String,
                "quantity": pl.String,
                "published": pl.String,
                "why_not": pl.String,
            },
        ),
        labels={"why_not": "why not"},
    ).html()
    ev = board["evidence_rows"]
    counts = ", ".join(f'<b id="count-{k}">{ev[k]}</b> {k}' for k in COUNTED_EVIDENCE)
    chart = _embed_html(charts.to_v5_spec(charts.evidence_scatter(detail)), "ett-chart-1") if detail else ""
    ok = sum(r.ok for r in results)
    findings = board.get("comparisons_failed", 0)
    failed = board["checks"] - board["checks_passed"] - findings
    fails = ", ".join(
        x
        for x in (
            f"{failed} FAIL" if failed else "",
            f"{findings} comparison{'s' if findings > 1 else ''} FAIL: findings, kept" if findings else "",
        )
        if x
    )
    paper_rows = len(published(external=None))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>ETT% reports: index and scorecard</title>
<script type="text/javascript">
{vega_bundle()}
</script>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 84em; color: #222; }}
h3 {{ margin-top: 1.4em; }} .pass {{ color: #2e7d32; font-weight: bold; }} \
.fail {{ color: #c62828; font-weight: bold; }}
{PAGE_CSS}
</style></head><body>
<h1>Effective Training Time (ETT%) reports</h1>
<div class="ett-banner synthetic" id="ett-banner"><b>Mostly SYNTHETIC data.</b> Each report says at its top whether it
is computed on SYNTHETIC traces (generated, calibrated to the paper's published aggregates, arXiv 2610.02057) or on
REAL measured runs, or holds the project's model to PUBLISHED figures of other publications; the data column below
says the same.</div>
<p>{ok} of {len(results)} reports built in {wall_s:.0f} s.</p>
<h2 id="evidence">What the scorecard shows</h2>
<p id="evidence-summary">Of {board["published_rows"]} published figures ({paper_rows} of the paper,
{board["published_rows"] - paper_rows} of other publications), {board["checked_rows"]} are checked:
{counts}, and <b id="count-identity">{board["identity_rows"]}</b> identities (arithmetic of other published figures,
counted in no class); {len(board["not_reproduced"])} are not checked (listed at the end). Each figure counts once,
under its strongest evidence. {board["checks_passed"]} of {board["checks"]} checks \
pass{f" ({fails})" if fails else ""}.</p>
<p id="calibrated-meaning">{e(board["calibrated_meaning"])}</p>
{chart}
{reports}
<h2 id="scorecard-title">Scorecard, by evidence class</h2>
<p id="scorecard-summary">Machine-readable: <a href="scorecard.json">scorecard.json</a> (an <code>evidence</code> field
on every row and check).</p>
{"".join(sections)}
<h2>Published figures not checked</h2>
{missing}
</body></html>
"""


def build_index(out_dir: Path, results: Sequence[Result], wall_s: float) -> dict:
    """Write ``scorecard.json`` and ``index.html`` in ``out_dir``; returns the combined scorecard."""
    names = {r.notebook for r in results}
    cards = [c for c in load_cards(out_dir) if c["notebook"] in names]
    board = combine(cards)
    board["reports"] = [
        {"notebook": r.notebook, "ok": r.ok, "seconds": round(r.seconds, 1), "charts": r.charts, "error": r.error}
        for r in results
    ]
    write_text(out_dir / "scorecard.json", json.dumps(board, indent=2, sort_keys=True) + "\n")
    write_text(out_dir / "index.html", index_html(results, cards, board, wall_s))
    return board


# ----------------------------------------------------------------------------- updating committed notebooks


def update_notebook(path: Path) -> None:
    """Re-execute a committed notebook in place with its defaults and write its canonical form."""
    import tempfile

    import nbformat  # imported here: it costs ~2 s at start-up of every `ett` command

    with tempfile.TemporaryDirectory() as tmp:
        executed = Path(tmp) / path.name
        execute(path, executed)
        nb = canonical(nbformat.read(executed, as_version=4))
    write_text(path, dumps(nb))
