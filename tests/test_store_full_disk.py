"""A full disk at every step of a refresh, a source's removal, a compaction and a Parquet publish (ettcore.store).

The store and its Parquet mirror live on a size-limited tmpfs mounted by the test (``mount -t tmpfs``: root only;
skipped, saying why, where it cannot mount one).  Each operation is run as the ``ett`` command with the test hook
``ETT_STORE_FILL_AT=<step>`` (``ettcore.store.db.step``), which, on reaching that named step, writes a filler file
until the tmpfs has no byte left; DuckDB's next write then fails as on a real full disk.  Each time:

- the command exits 2 with one line naming the store (and one more for a mirror the refresh could not publish),
  saying whether the operation committed, with no DuckDB message passed through raw and no traceback; or exits 0
  where the fault came after its last write;
- before the commit, the store file is byte for byte as before and nothing is written beside it (DuckDB leaves the
  write-ahead log it opened, empty, which the next open removes); from the commit on,
  the store reads (a reader's view, every table) exactly as after the operation run without a fault; the mirror's
  ``CURRENT.json`` and the folders it names are byte for byte as before, or as after;
- with the filler removed, the same command succeeds, and the store reads as after.

The fleets are SYNTHETIC (``tests/test_store_faults.py``'s ``fleet``: ``ettcore.synthetic.generator``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
from test_store_faults import _run, fleet, state  # noqa: F401  (fleet: the fixture)  tests/test_store_faults.py

from ettcore.engines.mirror_format import POINTER, folder_name

SIZE = "64m"
REFRESH_STEPS = ["attached", "compared", "deleted", "inserted", "attributed", "running", "summed", "recorded"]
OPERATIONS = {  # op -> (its arguments on store S, the steps it passes; the last step before which nothing committed)
    "refresh": (
        lambda s, f: ["ingest", str(s), str(f["day"])],
        [*REFRESH_STEPS, "committed", "checkpointed", "exported", "published"],
        "committed",
    ),
    "remove-source": (
        lambda s, f: ["store", "remove-source", str(s), "other"],
        ["attached", "removed", "summed", "recorded", "committed", "checkpointed"],
        "committed",
    ),
    "compact": (lambda s, f: ["store", "compact", str(s)], ["attached", "copied", "swapped"], "copied"),
    "publish": (lambda s, f: ["store", "publish", str(s)], ["(full before)", "exported", "published"], "published"),
}


@pytest.fixture(scope="module")
def disk(tmp_path_factory):
    """A 64 MiB tmpfs (unmounted at the end)."""
    where = tmp_path_factory.mktemp("tmpfs")
    got = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(where)], capture_output=True)
    if got.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (root only): {got.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


def _mirror(folder: Path) -> dict[str, bytes]:
    """What a reader of the mirror reads: its pointer and the files of the folders it names."""
    pointer = (folder / POINTER).read_bytes()
    out = {POINTER: pointer}
    for n in json.loads(pointer)["folders"]:
        for f in sorted((folder / folder_name(n)).iterdir()):
            out[f"{n}/{f.name}"] = f.read_bytes()
    return out


def _published(folder: Path) -> tuple[dict, list[str]]:
    """What a publish's result is, less what differs between two runs (the publish time, and the files' bytes and
    CRC-32s: the rows of a Parquet file come in any order): the pointer's other keys and the files it names."""
    doc = json.loads((folder / POINTER).read_bytes())
    names = sorted(f"{n}/{f.name}" for n in doc["folders"] for f in (folder / folder_name(n)).iterdir())
    return {k: v for k, v in doc.items() if k not in ("published_at", "files")}, names


def _last_id(s: Path) -> int:
    con = duckdb.connect(str(s), read_only=True)
    try:
        return con.execute(
            "SELECT greatest((SELECT coalesce(max(ingest_id), 0) FROM ett_ingests), "
            "(SELECT coalesce(max(ingest_id), 0) FROM ett_removals))"
        ).fetchall()[0][0]
    finally:
        con.close()


def _lay(disk: Path, saved: Path) -> None:
    """The tmpfs holding exactly the saved store and mirror (same paths: the store remembers its mirror's)."""
    for entry in disk.iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    shutil.copytree(saved, disk, dirs_exist_ok=True)


@pytest.mark.parametrize("op", list(OPERATIONS))
def test_a_full_disk_at_every_step_leaves_store_and_mirror_as_before_or_as_after(op, fleet, disk, tmp_path):  # noqa: F811
    args_of, steps, commit = OPERATIONS[op]
    s, m, filler = disk / "s.duckdb", disk / "mirror", disk / "filler"
    (tmp_path / "empty").mkdir()
    _lay(disk, tmp_path / "empty")
    shutil.copyfile(fleet["store"], s)
    assert _run(["store", "publish", str(s), str(m)]).returncode == 0
    if op == "publish":  # something to publish: a refresh without its publish
        assert _run(["ingest", str(s), str(fleet["day"])], {"ETT_STORE_KILL_AT": "checkpointed"}).returncode != 0
    saved = tmp_path / "saved"
    shutil.copytree(disk, saved)
    before_bytes, before_state, before_mirror = s.read_bytes(), state(s), _mirror(m)
    args = args_of(s, fleet)
    # the reference: the operation with room to spare
    r = _run(args)
    assert r.returncode == 0, r.stderr
    after_state, after_published = state(s, volatile=False), _published(m)
    outcomes = {}
    for step in steps:
        _lay(disk, saved)
        if step == "(full before)":
            env = {}
            subprocess.run(["sh", "-c", f"cat /dev/zero > {filler}"], capture_output=True)
        else:
            env = {"ETT_STORE_FILL_AT": step, "ETT_STORE_FILL_FILE": str(filler)}
        r = _run(args, env)
        assert "Traceback" not in r.stderr and "Error:" not in r.stderr, (step, r.stderr)
        committed = step != "(full before)" and steps.index(step) >= steps.index(commit)
        lines = r.stderr.splitlines()
        if r.returncode == 0:
            outcome = "done"
            assert step == steps[-1] or (op, step) == ("compact", "copied"), (op, step, r.stderr)  # nothing after
        else:
            assert r.returncode == 2, (op, step, r.returncode, r.stderr)
            assert lines and all(x.startswith("ett: ") for x in lines), r.stderr
            if op == "publish" or step in ("checkpointed", "exported"):  # the store done, the mirror not
                assert lines[0].startswith(f"ett: {m}: cannot write the Parquet mirror: the disk is full"), r.stderr
                assert len(lines) == (2 if op == "refresh" else 1), r.stderr
                outcome = "mirror refused"
            else:
                assert len(lines) == 1 and lines[0].startswith(f"ett: {s}: "), r.stderr
                said = "is committed, but not yet written" if committed else "is not committed"
                said = "the compaction is not done" if op == "compact" else said
                assert said in lines[0] and "the disk is full" in lines[0], (op, step, r.stderr)
                outcome = "committed, in the log" if committed else "not committed"
        if outcome == "not committed":
            assert s.read_bytes() == before_bytes, (op, step)  # byte for byte
            beside = {p.name: p.stat().st_size for p in disk.iterdir()} | {m.name: 0}
            # nothing written beside it: DuckDB leaves the write-ahead log it opened, empty
            assert beside == {s.name: len(before_bytes), m.name: 0, filler.name: beside[filler.name]} | (
                {f"{s.name}.wal": 0} if f"{s.name}.wal" in beside else {}
            ), (op, step, beside)
            assert state(s) == before_state
        else:  # a reader sees the operation done (a compaction: the same rows)
            assert state(s, volatile=False) == after_state, (op, step)
        if outcome in ("mirror refused", "not committed") or step in ("committed", "checkpointed"):
            assert _mirror(m) == before_mirror, (op, step)  # byte for byte
        else:
            assert _published(m) == after_published, (op, step)
        # room again: the same command succeeds and leaves the after state
        filler.unlink()
        again = _run(args)
        if op == "remove-source" and committed:  # removed already: said so, and the store reads as after
            assert again.returncode == 2 and "no source 'other' in the store" in again.stderr, again.stderr
        else:
            assert again.returncode == 0, (op, step, again.stderr)
        if op == "refresh" and committed:  # a second ingest of the same source: 0 new, 0 changed
            assert "0 new, 0 changed" in again.stdout, again.stdout
            got = state(s, volatile=False)
            assert len(got.pop("ett_ingests")) == len(after_state["ett_ingests"]) + 1
            assert got == {k: v for k, v in after_state.items() if k != "ett_ingests"}
        else:
            assert state(s, volatile=False) == after_state, (op, step)
        if op in ("refresh", "publish"):  # the mirror caught up with the store
            assert json.loads(_mirror(m)[POINTER])["published_id"] == _last_id(s)
        outcomes[step] = outcome
    print(f"{op}: full disk at {len(steps)} steps: {outcomes}")
