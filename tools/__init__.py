"""The project's own tools, run from a checkout (none of them is part of the installed ``ettcore`` package).

- ``tools/campaigns/``   the campaigns that record the bundled measured data (``data/live-job``, ``data/framework-run``,
  ``data/slurm-fleet``, ``data/slurm-multinode``, ``data/slurm-restarts``) and the tiny training jobs the integration
  tests run (:mod:`tools.campaigns`)
- ``tools/slurm/``       the project's own Slurm cluster: start, stop, configuration (shell)
- ``tools/monitoring/``  the project's own Prometheus, Alertmanager and node exporter, and the alert rules (shell, YAML)
- ``tools/frozen_outputs.py``  freezes the outputs of a fixed list of ``ett`` commands and compares two freezes
"""
