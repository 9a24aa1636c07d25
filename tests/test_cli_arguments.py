"""Option values the command line refuses: one short error line, whatever the user typed. Found by the
fuzzer's timeline and constraints cases (issue 38): a 5,000-digit number came back whole in the line."""
from __future__ import annotations

from conftest import DATA, run_cli

CLIP = DATA / "clips" / "soma_01_single_text_prompt"
HUGE = "5" * 5000


def _error_line(result) -> str:
    assert result.returncode == 2, result.stderr
    return result.stderr.rstrip("\n").split("\n")[-1]


def test_a_5000_digit_option_value_is_quoted_by_its_start_and_length(tmp_path):
    for arguments, option in ((("trim", CLIP, tmp_path / "t.bvh", "--start", HUGE), "--start"),  # our own type
                              (("loop", CLIP, tmp_path / "l.bvh", "--blend", HUGE), "--blend"),
                              (("constraints", "extract", CLIP, "-o", tmp_path / "c.json", "--seed", HUGE), "--seed"),
                              (("convert", CLIP, tmp_path / "c.bvh", "--format", HUGE), "--format")):  # argparse's own
        line = _error_line(run_cli(*arguments))
        assert "argument {}: ".format(option) in line and "'{}...' (5000 characters)".format("5" * 40) in line, line
        assert len(line) < 300, line
    line = _error_line(run_cli("trim", CLIP, tmp_path / "t.bvh", "--start", "5" * 39 + "x"))  # 40: shown whole
    assert line.endswith("argument --start: expected a whole number, got '{}x'".format("5" * 39)), line
    assert list(tmp_path.iterdir()) == []
