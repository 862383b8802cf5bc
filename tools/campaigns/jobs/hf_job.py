"""A tiny Hugging Face Trainer job with the ETT callback: one try of it per process (run by the tests).

    python tools/campaigns/jobs/hf_job.py --run-dir R --work W --try N [--crash-at S] [--sigterm-at S] [--compile]

A GPT-2 language model built from a config (one layer, 32-wide, 64-token
vocabulary: no weights are downloaded; run offline) on generated token
sequences, a step padded to about 20 ms with a sleep, a checkpoint every 10
steps, an evaluation every 20, and ``resume_from_checkpoint`` when the output
folder holds one.  ``--crash-at S`` raises an error at the start of the step
after global step S; ``--sigterm-at S`` sends the process SIGTERM there (the
Trainer has no handler: the process dies by it).  The ground-truth log is
written by this script's own callback and its Trainer subclass, never through
ettcore.
"""

from __future__ import annotations

import os
import signal
import time

FIRST_T = time.time()  # ground truth: this process was running by now (only the standard library imported)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

torch.set_num_threads(1)

from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainerCallback, TrainingArguments  # noqa: E402
from transformers.trainer_utils import get_last_checkpoint  # noqa: E402

from ettcore.integrations.huggingface import ETTCallback  # noqa: E402
from tools.campaigns.jobs.ground_truth import EventLog, job_arguments  # noqa: E402

STEP_PAD_S = 0.02


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n: int, length: int = 16, vocab: int = 64, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(seed)
        self.ids = torch.randint(0, vocab, (n, length), generator=g)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def tiny_gpt2() -> GPT2LMHeadModel:
    """A one-layer, 32-wide GPT-2 built from its config (random weights: nothing is downloaded)."""
    return GPT2LMHeadModel(
        GPT2Config(vocab_size=64, n_positions=32, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0)
    )


def quiet_args(output_dir, steps: int, **more) -> TrainingArguments:
    """The arguments of a short CPU run that saves, evaluates and logs nothing (``more`` adds or overrides)."""
    base = dict(
        output_dir=str(output_dir),
        max_steps=steps,
        per_device_train_batch_size=8,
        save_strategy="no",
        eval_strategy="no",
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
        dataloader_num_workers=0,
    )
    return TrainingArguments(**{**base, **more})


class StepLogger(TrainerCallback):
    """Ground truth: this script's own callback (steps; the injected crash or signal)."""

    def __init__(self, log: EventLog, crash_at: int | None, sigterm_at: int | None) -> None:
        self.log_, self.crash_at, self.sigterm_at = log, crash_at, sigterm_at
        self.t = 0.0

    def on_train_begin(self, args, state, control, **kwargs):
        now = time.time()
        self.log_.write("train_start", state.global_step, now, now)

    def on_step_begin(self, args, state, control, **kwargs):
        self.t = time.time()
        if state.global_step == self.crash_at:
            self.log_.write("crash", state.global_step, self.t, self.t)
            raise RuntimeError(f"injected failure after step {state.global_step}")
        if state.global_step == self.sigterm_at:
            self.log_.write("crash", state.global_step, self.t, self.t)
            os.kill(os.getpid(), signal.SIGTERM)

    def on_step_end(self, args, state, control, **kwargs):
        self.log_.write("step", state.global_step, self.t, time.time())


class LoggedTrainer(Trainer):
    """Ground truth for evaluations and saves (this script's own timing around the Trainer's)."""

    def __init__(self, *args, event_log: EventLog, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.event_log = event_log

    def training_step(self, *args, **kwargs):
        time.sleep(STEP_PAD_S)
        return super().training_step(*args, **kwargs)

    def evaluate(self, *args, **kwargs):
        t = time.time()
        try:
            return super().evaluate(*args, **kwargs)
        finally:
            self.event_log.write("eval", self.state.global_step, t, time.time())

    def _save_checkpoint(self, *args, **kwargs):
        t = time.time()
        try:
            return super()._save_checkpoint(*args, **kwargs)
        finally:
            self.event_log.write("save", self.state.global_step, t, time.time())


def main() -> None:
    a = job_arguments(__doc__)
    log = EventLog(a.work, a.try_no)
    log.lifetime(FIRST_T)  # before the callback: its exit record is then written after ettcore's atexit
    callback = ETTCallback(a.run_dir, job_id="hf-tiny", model_family="gpt2")
    torch.manual_seed(0)
    model = tiny_gpt2()
    out = a.work / "hf-output"
    args = TrainingArguments(
        output_dir=str(out),
        max_steps=a.steps,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=16,
        save_strategy="steps",
        save_steps=10,
        eval_strategy="steps",
        eval_steps=20,
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
        dataloader_num_workers=0,
        seed=0,
        learning_rate=1e-3,
        torch_compile=a.compile,
        torch_compile_backend="aot_eager" if a.compile else None,
    )
    trainer = LoggedTrainer(
        model=model,
        args=args,
        train_dataset=Tokens(2048),
        eval_dataset=Tokens(32, seed=1),
        callbacks=[StepLogger(log, a.crash_at, a.sigterm_at), callback],
        event_log=log,
    )
    resume = get_last_checkpoint(str(out)) if out.is_dir() else None
    trainer.train(resume_from_checkpoint=resume)
    print(f"ett callback errors: {callback.errors}")


if __name__ == "__main__":
    main()
