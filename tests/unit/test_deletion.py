"""The rule of memoryctl's commands that delete (dlq drop, commands drop): list what would go,
then delete only on a yes at the terminal or --yes; without a terminal, refuse."""

from __future__ import annotations

import pytest

from worker.cli import deletion

LISTED = [f"{seq}: memory.create.1 (invalid_command)" for seq in range(1, 4)]


def decide(listed=LISTED, *, yes=False, dry_run=False, answer=None):
    lines: list[str] = []
    asked: list[str] = []

    def ask(question: str) -> bool | None:
        asked.append(question)
        return answer

    code = deletion.confirm(listed, "dead letter(s)", yes=yes, dry_run=dry_run, out=lines.append, ask=ask)
    return code, lines, asked


def test_without_a_terminal_and_without_yes_it_refuses_naming_the_flags():
    code, lines, asked = decide(answer=None)
    assert code == deletion.REFUSED != 0
    assert lines[0] == "3 dead letter(s) to drop:" and lines[1:4] == [f"  {line}" for line in LISTED]
    assert "no terminal to confirm on" in lines[-1] and "--yes" in lines[-1] and "--dry-run" in lines[-1]


def test_the_question_names_how_many_and_a_no_keeps_them():
    code, lines, asked = decide(answer=False)
    assert code == deletion.DECLINED != 0
    assert asked == ["drop these 3 dead letter(s)? This cannot be undone [y/N] "]
    assert lines[-1] == "nothing dropped"


@pytest.mark.parametrize("yes, answer", [(False, True), (True, None)])
def test_a_yes_at_the_terminal_or_the_flag_goes_ahead(yes, answer):
    code, lines, asked = decide(yes=yes, answer=answer)
    assert code is None and lines[0] == "3 dead letter(s) to drop:"
    assert asked == ([] if yes else [asked[0]])


def test_a_dry_run_lists_every_one_and_never_asks():
    many = [str(n) for n in range(deletion.SHOWN + 5)]
    code, lines, asked = decide(many, dry_run=True, yes=True)
    assert (code, asked) == (0, [])
    assert lines[1:-1] == [f"  {n}" for n in many]
    assert lines[-1] == f"dry run: {len(many)} dead letter(s) would be dropped, nothing deleted"


def test_before_asking_it_lists_the_first_ones_and_says_how_many_more():
    many = [str(n) for n in range(deletion.SHOWN + 5)]
    _, lines, _ = decide(many, answer=False)
    assert lines[1:deletion.SHOWN + 1] == [f"  {n}" for n in many[:deletion.SHOWN]]
    assert lines[deletion.SHOWN + 1] == "  ... and 5 more (--dry-run lists every one)"


def test_nothing_to_delete_needs_no_confirmation():
    assert decide([], answer=None) == (None, [], [])
