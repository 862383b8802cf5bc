"""Importers: other people's lifecycle logs in, ETT traces out.

- :mod:`ettcore.importers.mlperf`        MLPerf Training result logs (MLLOG)
- :mod:`ettcore.importers.goodput`       entries written by ml-goodput-measurement's recorder
- :mod:`ettcore.importers.slurm`         Slurm accounting (``sacct --parsable2`` or ``--json``)
- :mod:`ettcore.importers.sacct_poll`    ``sacct`` run for a poll (``ett ingest STORE --slurm``): the partial export
- :mod:`ettcore.importers.recorder_join` a recorder run folder's spans joined into a scheduler's runs
- :mod:`ettcore.importers.import_report` what an import dropped, merged, inferred, and why
- :mod:`ettcore.importers.frames`        the imported tables and how they are written
- :mod:`ettcore.importers.recorder`      a recorder run folder (JSON lines) converted into a trace

The ``ett import`` command (:mod:`ettcore.cli.imports`)::

    ett import mlperf LOG_OR_FOLDER... [--systems DIR] [--gpus N | --gpus LOG=N ...] --out TRACE
    ett import goodput ENTRIES --out TRACE [--gpus N]
    ett import slurm SACCT... [--recorder RUN_DIR] --out TRACE

(their options are defined once, in :mod:`ettcore.cli.import_options`, which ``ett ingest`` shares).
Each writes the trace folder ``TRACE`` (``trace.json`` says ``"synthetic": false``
and lists the source files) with ``import_report.json`` and
``import_report.md`` inside it.
"""
