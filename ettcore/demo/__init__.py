"""A live, instrumented training job: the recorder used on a real PyTorch run.

- :mod:`ettcore.demo.conditions`  run conditions of the paired experiment (no PyTorch)
- :mod:`ettcore.demo.recsys`      the recommendation model and its synthetic click data (PyTorch)
- :mod:`ettcore.demo.attempt`     one attempt of the training job, instrumented (PyTorch; run as a process)
- :mod:`ettcore.demo.supervisor`  runs attempts as processes, induces failures, restarts,
  keeps ground truth (no PyTorch)
- :mod:`ettcore.demo.live_job`    the paired baseline/optimized experiment and its bundled results (no PyTorch)
- :mod:`ettcore.demo.framework_run`  a Lightning job recorded by ``ETTCallback`` alone,
  with ground truth (no PyTorch to read)

PyTorch is the optional extra ``ettcore[torch]``; everything that reads the
bundled results (``data/live-job``) works without it.
"""
