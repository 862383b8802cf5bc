"""Integrations: hooks that run inside a training job and feed the recorder.

- :mod:`ettcore.integrations.slurm`  the Slurm job id and attempt from a batch job's environment
"""
