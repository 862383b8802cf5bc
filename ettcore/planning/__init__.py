"""What an optimization returns: pure functions on published or measured inputs, formulas in their docstrings.

- :mod:`ettcore.planning.startup`        critical path of overlapped start-up, technique waterfalls
- :mod:`ettcore.planning.restarts`       the (1 + NoF) rule, direct versus cascade attribution
- :mod:`ettcore.planning.checkpointing`  wasted time against the checkpoint interval, optimum, Young, Daly
- :mod:`ettcore.planning.expected`       expected ETT% in closed form and by Monte Carlo, Meta's ETTR model
- :mod:`ettcore.planning.whatif`         projected ETT% of a trace under a set of techniques
- :mod:`ettcore.planning.opportunities`  GPU-hours a day returned if an owner's component fell to a target
- :mod:`ettcore.planning.scheduling`     preemption policies simulated on a fleet
- :mod:`ettcore.planning.reliability`    failures per GPU-hour, MTTF and expected ETT% against job size
- :mod:`ettcore.planning.evidence`       the expected-ETT model on other publications' inputs, uncertainties
- :mod:`ettcore.planning.lemon_check`    recall and false alarms of the lemon-node flag on SYNTHETIC fleets
"""
