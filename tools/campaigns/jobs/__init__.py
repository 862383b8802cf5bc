"""The demo training jobs the integration tests and ``make framework-run`` run, and their ground truth.

Each job script (a tiny Lightning, Hugging Face or ``torchrun`` job) is run as a process and logs its own events
with :class:`tools.campaigns.jobs.ground_truth.EventLog`; :mod:`tools.campaigns.jobs.ground_truth` turns the events
into the numbers the trace must show.  Nothing here imports the framework callbacks under test.
"""

from pathlib import Path

JOBS_DIR = Path(__file__).resolve().parent
