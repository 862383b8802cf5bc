"""Synthetic traces, always labelled synthetic: scenario files, the generator and cached scenario traces.

- :mod:`ettcore.synthetic.scenario`   scenario files (``data/scenarios/``), each listing its assumptions
- :mod:`ettcore.synthetic.generator`  drawing a trace from a scenario
- :mod:`ettcore.synthetic.traces`     generated traces cached under ``data/generated/`` for the notebooks
- :mod:`ettcore.synthetic.table5`     Llama 3's Table 5 interruptions as a trace, read with its causes file
"""
