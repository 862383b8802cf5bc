"""Slurm host lists: the forms sacct writes expand as Slurm expands them; other forms are refused, naming the field."""

import pytest

from ettcore.errors import InputError
from ettcore.trace.hostlist import HostlistError, expand, expand_field, no_nodes


@pytest.mark.parametrize(
    "text, hosts",
    [
        ("n1", ["n1"]),
        ("node[01-04,07]", ["node01", "node02", "node03", "node04", "node07"]),
        ("gpu[01-03,07]", ["gpu01", "gpu02", "gpu03", "gpu07"]),
        ("gpu[08-10]", ["gpu08", "gpu09", "gpu10"]),  # padding kept from the low end
        ("gpu[8-10]", ["gpu8", "gpu9", "gpu10"]),  # no padding
        ("n1,gpu[01-02]", ["n1", "gpu01", "gpu02"]),
        ("gpu[1-2],cpu[5,9]", ["gpu1", "gpu2", "cpu5", "cpu9"]),
        ("rack[1-2]n[1-2]", ["rack1n1", "rack1n2", "rack2n1", "rack2n2"]),
        ("[1-2]", ["1", "2"]),
        ("a-b.c_d[3]", ["a-b.c_d3"]),
        ("node[007]", ["node007"]),
        ("sn[1-1]x", ["sn1x"]),
    ],
)
def test_expands_the_forms_slurm_writes(text, hosts):
    assert expand(text) == hosts


@pytest.mark.parametrize(
    "text, why",
    [
        ("", "empty"),
        ("gpu[01-03", "'[' without ']'"),
        ("gpu01-03]", "']' without '['"),
        ("gpu[[1-2]]", "nested"),
        ("gpu[]", "empty brackets"),
        ("gpu[05-03]", "reversed range"),
        ("gpu[a-c]", "not lo-hi"),
        ("gpu[1-]", "not lo-hi"),
        ("gpu[1-9:2]", "not lo-hi"),
        ("gpu[1,,2]", "not a number"),
        ("a,,b", "empty host name"),
        ("a,", "empty host name"),
        ("gpu 01", "white space"),
        ("gpu[1-2],gpu2", "named twice"),
        ("gpu*", "character outside"),
        ("n[0-99999]x[0-9]", "more than"),
    ],
)
def test_refuses_forms_slurm_does_not_write(text, why):
    with pytest.raises(HostlistError, match=why.replace("[", r"\[")):
        expand(text)


def test_refusal_names_file_row_and_field():
    with pytest.raises(InputError) as e:
        expand_field("gpu[05-03]", "sacct.txt", 7, "NodeList")
    p = e.value.problems[0]
    assert (p.file, p.row, p.field) == ("sacct.txt", 7, "NodeList")
    assert "reversed range" in p.message


def test_no_nodes():
    assert no_nodes("None assigned") and no_nodes("") and no_nodes(None) and no_nodes("(null)")
    assert not no_nodes("gpu01")
