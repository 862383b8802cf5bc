"""Interruptions per node, and nodes whose count is improbable for their exposure (lemon-node detection).

Reads the attempts' optional ``nodes`` column (a Slurm host list, :mod:`ettcore.trace.hostlist`) and their cause
(:func:`register_causes`: the optional ``cause`` column, else derived from the end reason).

- **Exposure** of a node: the GPU-hours it held.  An attempt of a job with ``G`` GPUs on ``k`` nodes holds
  ``G / k`` GPUs on each for its measured time (to the as-of time, inside the analysis window, outside the job's
  exclusion windows), so the nodes' exposures add up to the fleet's GPU-hours on listed nodes.
- **Interruptions** of a node: the measured interruptions whose cause is in ``causes`` (default
  :data:`NODE_CAUSES`: the causes of the groups the vocabulary counts against a node (``node: true`` in
  ``ettcore/defaults/causes.yaml``; with a user's causes file, its causes of those groups too): every cause but
  preemption, a user or application error and a time limit, which are not the node's doing), each shared ``1 / k``
  across the ``k`` nodes of its attempt.  ``rate_per_1k_gpu_h`` is ``1000 x interruptions / exposure_gpu_h``.
- **The test**: under the null hypothesis every node fails at the fleet's rate per GPU-hour,
  ``r = (counted interruptions) / (GPU-hours of the attempts on listed nodes)``.  An attempt's interruptions are
  then Poisson with mean ``r x`` its GPU-hours, and so is ``involved``, the count of counted interruptions of the
  attempts a node was in (whole, not shared: a node in a failed 4-node run was in that failure), with mean
  ``expected = r x attempt_gpu_h`` (the GPU-hours of those attempts).  The one-sided p-value is
  ``P(Poisson(expected) >= involved)``; a node is **flagged** when it is below ``alpha / m`` (Bonferroni over the
  ``m`` nodes with exposure), so the chance of flagging any node of a fleet without a bad one is at most ``alpha``
  (default 0.01).  A node of a multi-node run that failed shares that failure's ``involved`` with its neighbours;
  a lemon is told from them by its other failures.

- **Concentration**: the share of the node-attributed interruptions (shared as above) on the ``k`` nodes with the
  most (:meth:`NodeReport.concentration`), and their Lorenz curve over the nodes with exposure
  (:meth:`NodeReport.lorenz`): failures piled on a handful of nodes, beside the test's flags.

The queries are ``ettcore/sql/metric/attempt_causes.sql`` and ``node_exposure.sql``.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from ettcore import metric
from ettcore.errors import InputError, Problem
from ettcore.trace.hostlist import expand_field, no_nodes
from ettcore.trace.load import Trace, quote_ident, relation_kind
from ettcore.trace.queries import sql
from ettcore.vocabulary import VOCABULARY

# The causes of the system and the hardware, the ones the MTTF fit counts (ettcore.planning.reliability), and those
# the node report counts by default: the vocabulary's groups say which (``mttf`` and ``node`` in causes.yaml; system
# and hardware failures are the node's doing, an unknown one may be).
SYSTEM_CAUSES = VOCABULARY.mttf_causes
NODE_CAUSES = VOCABULARY.node_causes
DEFAULT_ALPHA = 0.01


def _column(trace: Trace, table: str, name: str) -> str | None:
    """The spelling of column ``name`` (compared without case) in ``table``, or None."""
    cols = [r[0] for r in trace.con.execute(f"DESCRIBE {table}").fetchall()]
    return next((c for c in cols if c.lower() == name), None)


def register_given(trace: Trace) -> None:
    """The view ``attempt_given``: each clean attempt's ``nodes`` and ``cause`` as the trace gives them (NULL where
    a column is absent), with the file and row it was read from.  A ``cause`` in ``clean_attempts`` (a loader that
    types it) is taken from there, else from the rows as read."""
    con = trace.con
    # a fleet store keeps the rows it stored (its nodes beside the typed columns) and no rows as read
    has_raw = relation_kind(con, "raw_attempts") is not None

    def given(name: str) -> str:
        typed = _column(trace, "clean_attempts", name)
        if typed:
            return f"a.{quote_ident(typed)}::VARCHAR"
        read = _column(trace, "raw_attempts", name) if has_raw else None
        return f"r.{quote_ident(read)}::VARCHAR" if read else "NULL::VARCHAR"

    con.execute(
        "CREATE OR REPLACE TEMP VIEW attempt_given AS SELECT a.job_id, a.attempt, a._file, a._row, "
        f"{given('nodes')} AS nodes, {given('cause')} AS cause FROM clean_attempts AS a "
        + ("LEFT JOIN raw_attempts AS r ON r._file = a._file AND r._row = a._row" if has_raw else "")
    )


def register_causes(trace: Trace) -> None:
    """The view ``attempt_causes`` (``attempt_causes.sql``): every measured interruption with its cause, the
    attempt's ``cause`` where given, else derived from its end reason (preemption -> preemption, failure ->
    unknown).  A given cause outside the trace's vocabulary (:func:`ettcore.metric.vocabulary_of`: the package's and
    a user's causes file's) is an input error naming file, row and ``cause``."""
    metric.prepare(trace)
    register_given(trace)
    known = metric.vocabulary_of(trace).cause_names
    bad = trace.con.execute(
        "SELECT _file, _row, cause FROM attempt_given WHERE nullif(lower(trim(cause)), '') IS NOT NULL "
        "AND NOT list_contains($c, lower(trim(cause))) ORDER BY _file, _row LIMIT 50",
        {"c": list(known)},
    ).fetchall()
    if bad:
        raise InputError(
            [
                Problem(f, r, "cause", f"unknown cause {c!r}; known: {', '.join(known)}", table="attempts")
                for f, r, c in bad
            ]
        )
    trace.con.execute(f"CREATE OR REPLACE TEMP VIEW attempt_causes AS {sql('metric/attempt_causes')}")
    trace.con.execute(f"CREATE OR REPLACE TEMP VIEW attempt_held AS {sql('metric/attempt_held')}")


def causes(trace: Trace) -> pl.DataFrame:
    """NoF by cause: ``cause, nof`` for every cause of the trace's vocabulary (zero included), in its order."""
    register_causes(trace)
    known = metric.vocabulary_of(trace).cause_names
    got = dict(trace.con.execute("SELECT cause, count(*) FROM attempt_causes GROUP BY cause").fetchall())
    return pl.DataFrame({"cause": list(known), "nof": [int(got.get(c, 0)) for c in known]})


def _check_causes(chosen: tuple[str, ...], known: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [c for c in chosen if c not in known]
    if unknown or not chosen:
        raise InputError(
            Problem("--causes", None, "causes", f"unknown cause(s) {unknown or chosen!r}; known: {', '.join(known)}")
        )
    return tuple(chosen)


def register_node_attempts(trace: Trace) -> int:
    """The table ``node_attempts`` (job_key, attempt, node, k) of the measured attempts with a node list; returns
    how many measured attempts have none."""
    rows = trace.con.execute(
        "SELECT a.job_key, a.attempt, g.nodes, g._file, g._row FROM metric_attempts AS a "
        "JOIN metric_jobs AS j ON j.job_key = a.job_key "
        "JOIN attempt_given AS g ON g.job_id = j.job_id AND g.attempt = a.attempt"
    ).fetchall()
    keys, attempts, names, ks = [], [], [], []
    without = 0
    for job_key, attempt, text, file, row in rows:
        if no_nodes(text):
            without += 1
            continue
        hosts = expand_field(text, file, row, "nodes", table="attempts")
        for h in hosts:
            keys.append(job_key)
            attempts.append(attempt)
            names.append(h)
            ks.append(len(hosts))
    df = pl.DataFrame(
        {"job_key": keys, "attempt": attempts, "node": names, "k": ks},
        schema={"job_key": pl.UInt64, "attempt": pl.Int64, "node": pl.String, "k": pl.Int64},
    )
    trace.con.register("_arrow_node_attempts", df.to_arrow())
    trace.con.execute("CREATE OR REPLACE TEMP TABLE node_attempts AS SELECT * FROM _arrow_node_attempts")
    return without


@dataclass(frozen=True)
class NodeReport:
    """Per-node rates and the test (module doc)."""

    nodes: pl.DataFrame  # node, jobs, attempts, exposure_gpu_h, held_h, interruptions, rate_per_1k_gpu_h, involved,
    # expected, p_value, flagged
    causes: tuple[str, ...]
    alpha: float
    threshold: float  # alpha / m
    fleet_rate_per_1k_gpu_h: float  # 1000 x counted interruptions / GPU-hours on listed nodes
    counted: int  # counted interruptions of attempts with a node list
    gpu_h: float  # GPU-hours on listed nodes
    attempts_without_nodes: int

    @property
    def flagged(self) -> list[str]:
        return self.nodes.filter(pl.col("flagged"))["node"].to_list()

    def concentration(self, worst: int) -> float | None:
        """The share (0-1) of the node-attributed interruptions (each shared ``1 / k`` across its attempt's ``k``
        nodes) that fell on the ``worst`` nodes with the most; None when no node has one."""
        if worst < 1:
            raise InputError(Problem("--worst", None, "worst", f"at least one node, got {worst!r}"))
        shares = self.nodes["interruptions"].sort(descending=True)
        total = float(shares.sum())
        return float(shares.head(worst).sum()) / total if total > 0 else None

    def lorenz(self) -> pl.DataFrame:
        """The Lorenz curve of the interruptions over the nodes with exposure: one row a node, fewest interruptions
        first (then by name), ``node, node_share, interruption_share``: the cumulative shares (0-1) of the nodes
        and of their interruptions up to it.  Empty when no node has an interruption."""
        df = self.nodes.filter(pl.col("exposure_gpu_h") > 0).sort("interruptions", "node")
        total = float(df["interruptions"].sum())
        if total <= 0:
            return pl.DataFrame(schema={"node": pl.String, "node_share": pl.Float64, "interruption_share": pl.Float64})
        return df.select(
            "node",
            (pl.int_range(1, pl.len() + 1) / pl.len()).cast(pl.Float64).alias("node_share"),
            (pl.col("interruptions").cum_sum() / total).alias("interruption_share"),
        )


def poisson_p_value(observed: int, expected: float) -> float:
    """One-sided ``P(Poisson(expected) >= observed)`` (1 for ``observed == 0``)."""
    if observed <= 0:
        return 1.0
    if expected <= 0:
        return 0.0
    from scipy import stats  # here: importing scipy costs every ett command half a second of start-up

    return float(stats.poisson.sf(observed - 1, expected))


def node_report(trace: Trace, causes: tuple[str, ...] | None = None, alpha: float = DEFAULT_ALPHA) -> NodeReport:
    """Interruptions per node per GPU-hour and the flagged nodes (module doc); ``causes`` default: the node causes
    of the trace's vocabulary (:data:`NODE_CAUSES`, with a user's causes file's causes of the node groups)."""
    vocabulary = metric.vocabulary_of(trace)
    chosen = _check_causes(vocabulary.node_causes if causes is None else tuple(causes), vocabulary.cause_names)
    if not (0 < alpha < 1):
        raise InputError(Problem("--alpha", None, "alpha", f"must be in (0, 1), got {alpha!r}"))
    register_causes(trace)
    without = register_node_attempts(trace)
    df = trace.sql(sql("metric/node_exposure"), {"causes": list(chosen)})
    counted = int(
        trace.con.execute(
            "SELECT count(*) FROM attempt_causes AS c SEMI JOIN node_attempts AS n "
            "ON n.job_key = c.job_key AND n.attempt = c.attempt WHERE list_contains($c, c.cause)",
            {"c": list(chosen)},
        ).fetchall()[0][0]
    )
    gpu_h = float(
        trace.con.execute(
            "SELECT coalesce(sum(exposure_gpu_h), 0) FROM (" + sql("metric/node_exposure") + ")",
            {"causes": list(chosen)},
        ).fetchall()[0][0]
    )
    rate = counted / gpu_h if gpu_h > 0 else 0.0
    exposed = df.filter(pl.col("exposure_gpu_h") > 0).height
    threshold = alpha / max(exposed, 1)
    expected = [rate * g for g in df["attempt_gpu_h"].to_list()]
    p = [poisson_p_value(int(o), e) for o, e in zip(df["involved"].to_list(), expected)]
    df = df.with_columns(
        (1000.0 * pl.col("interruptions") / pl.col("exposure_gpu_h")).fill_nan(None).alias("rate_per_1k_gpu_h"),
        pl.Series("expected", expected, dtype=pl.Float64),
        pl.Series("p_value", p, dtype=pl.Float64),
    ).with_columns(((pl.col("p_value") < threshold) & (pl.col("exposure_gpu_h") > 0)).alias("flagged"))
    df = df.select(
        "node",
        "jobs",
        "attempts",
        "exposure_gpu_h",
        "held_h",
        "interruptions",
        "rate_per_1k_gpu_h",
        "involved",
        "expected",
        "p_value",
        "flagged",
    )
    return NodeReport(df, chosen, alpha, threshold, 1000.0 * rate, counted, gpu_h, without)
