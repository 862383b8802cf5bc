"""Hooks inside a running training job that write an ETT trace without changes to the job's code.

- :mod:`ettcore.integrations.lightning`    ``ETTCallback``, a PyTorch Lightning callback
- :mod:`ettcore.integrations.huggingface`  ``ETTCallback``, a Hugging Face ``TrainerCallback``
- :mod:`ettcore.integrations.torchrun`     restarts by the TorchElastic agent (``torchrun --max-restarts``) as attempts
- :mod:`ettcore.integrations.phase_clock`     the phase timeline the callbacks drive (no framework needed)
- :mod:`ettcore.integrations.process`      the training process as an attempt: ids, start time, how it ended
- :mod:`ettcore.integrations.slurm`        the Slurm job id and attempt from a batch job's environment

Every callback writes through :class:`ettcore.integrations.recorder.Recorder` (crash-safe
JSONL); ``ett from-recorder RUN_DIR TRACE`` turns the run folder into a trace.
The frameworks are optional extras (``ettcore[lightning]``, ``ettcore[hf]``);
nothing here imports them until a callback is used.
"""
