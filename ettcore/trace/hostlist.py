"""Slurm host lists (``gpu[01-03,07]``): expanded to host names, and refused in forms Slurm does not write.

The grammar, as Slurm's ``hostlist.c`` writes a ``NodeList`` (``sacct``, ``squeue``, ``scontrol show hostnames``):

- a host list is one or more **host expressions** separated by commas at the top level: ``n1,gpu[01-02]``;
- a host expression is literal text (letters, digits, ``-``, ``_``, ``.``) with zero or more **bracket groups**,
  each a comma list of numbers and ranges ``lo-hi`` (``lo <= hi``): ``node[01-04,07]``; several groups expand to
  every combination, in order (``rack[1-2]n[1-2]`` is ``rack1n1, rack1n2, rack2n1, rack2n2``);
- a range keeps the zero padding of its low end: ``[08-10]`` is ``08, 09, 10``; ``[8-10]`` is ``8, 9, 10``.

Refused (:class:`HostlistError`, which :func:`expand_field` turns into an input error naming file, row and field):
an empty list or an empty expression (``a,,b``), unbalanced or nested brackets, an empty group (``gpu[]``), a
range whose ends are not whole numbers or whose low end exceeds its high end (``[05-03]``), a step (``[1-9:2]``),
white space, a host named twice, and more than :data:`MAX_HOSTS` hosts.

``None assigned`` (a job that never ran) and an empty value are no nodes: :func:`expand` is not asked for them
(:func:`no_nodes`).
"""

from __future__ import annotations

import itertools
import re

from ettcore.errors import InputError, Problem

MAX_HOSTS = 100_000
_LITERAL = re.compile(r"^[A-Za-z0-9_.\-]*$")
_NUMBER = re.compile(r"^\d+$")
_NO_NODES = ("", "none assigned", "(null)", "none")


class HostlistError(ValueError):
    """A host list in a form Slurm does not write."""


def no_nodes(text: str | None) -> bool:
    """Whether a ``NodeList`` value names no node (empty, ``None assigned``, ``(null)``)."""
    return text is None or text.strip().lower() in _NO_NODES


def _split_top(text: str) -> list[str]:
    """The comma-separated parts outside brackets; unbalanced or nested brackets refused."""
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            if depth:
                raise HostlistError(f"nested '[' in {text!r}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(f"']' without '[' in {text!r}")
            depth = 0
        elif ch == "," and not depth:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    if depth:
        raise HostlistError(f"'[' without ']' in {text!r}")
    parts.append("".join(cur))
    return parts


def _group(body: str, text: str) -> list[str]:
    """The numbers of one bracket group (``01-03,07``), as text with their padding."""
    if not body:
        raise HostlistError(f"empty brackets in {text!r}")
    out: list[str] = []
    for item in body.split(","):
        if "-" in item:
            lo, _, hi = item.partition("-")
            if not (_NUMBER.match(lo) and _NUMBER.match(hi)):
                raise HostlistError(f"range {item!r} is not lo-hi of whole numbers in {text!r}")
            if int(lo) > int(hi):
                raise HostlistError(f"reversed range {item!r} (low end above high end) in {text!r}")
            if int(hi) - int(lo) >= MAX_HOSTS:
                raise HostlistError(f"range {item!r} names more than {MAX_HOSTS} hosts in {text!r}")
            width = len(lo)
            out += [str(n).zfill(width) for n in range(int(lo), int(hi) + 1)]
        elif _NUMBER.match(item):
            out.append(item)
        else:
            raise HostlistError(f"{item!r} is not a number or a range lo-hi in {text!r}")
    return out


def _expression(expr: str, text: str) -> list[str]:
    """The hosts of one host expression (literal text and bracket groups, every combination in order)."""
    if not expr:
        raise HostlistError(f"empty host name in {text!r}")
    pieces = re.split(r"(\[[^\]]*\])", expr)
    choices: list[list[str]] = []
    for piece in pieces:
        if piece.startswith("["):
            choices.append(_group(piece[1:-1], text))
        elif piece:
            if not _LITERAL.match(piece):
                raise HostlistError(f"character outside a host name in {piece!r} of {text!r}")
            choices.append([piece])
    total = 1
    for c in choices:
        total *= len(c)
    if total > MAX_HOSTS:
        raise HostlistError(f"{expr!r} names more than {MAX_HOSTS} hosts")
    return ["".join(combo) for combo in itertools.product(*choices)]


def expand(text: str) -> list[str]:
    """The host names of a Slurm host list, in Slurm's order; :class:`HostlistError` for a form Slurm does not
    write (module doc)."""
    if not isinstance(text, str) or not text:
        raise HostlistError("empty host list")
    if text != text.strip() or any(ch.isspace() for ch in text):
        raise HostlistError(f"white space in host list {text!r}")
    hosts: list[str] = []
    for expr in _split_top(text):
        hosts += _expression(expr, text)
        if len(hosts) > MAX_HOSTS:
            raise HostlistError(f"{text!r} names more than {MAX_HOSTS} hosts")
    seen: set[str] = set()
    for h in hosts:
        if h in seen:
            raise HostlistError(f"host {h!r} named twice in {text!r}")
        seen.add(h)
    return hosts


def expand_field(text: str, file: str, row: int | None, field: str, table: str | None = None) -> list[str]:
    """:func:`expand`, its refusal an :class:`~ettcore.errors.InputError` naming ``file``, ``row`` and ``field``."""
    try:
        return expand(text)
    except HostlistError as exc:
        raise InputError(
            Problem(file, row, field, f"not a node list Slurm writes (e.g. gpu[01-03,07]): {exc}", table=table)
        ) from None
