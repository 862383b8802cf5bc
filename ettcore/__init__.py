"""ettcore: Effective Training Time (ETT%) for training-job traces.

Modules, one idea each:

- :mod:`ettcore.config`     where things live (paths come from here only)
- :mod:`ettcore.phases`     phase vocabulary, L2 components and owners, mapping files
- :mod:`ettcore.errors`     the input-error type every loader raises
- :mod:`ettcore.trace`      finding and reading the trace tables into DuckDB
- :mod:`ettcore.checks`     validation: the data-check queries and their findings
- :mod:`ettcore.metric`     ETT%, L1, L2, fleet and trend (DuckDB SQL in ``ettcore/sql``)
- :mod:`ettcore.cli`        the ``ett`` command
"""

__version__ = "0.1.0"
