"""The benchmark script still runs end to end (on a tiny brain; it reports, never asserts speed)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench_research.py"
BENCH_WEB = BENCH.parent / "bench_web.py"


def test_bench_runs_and_prints_ratios(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            str(BENCH),
            "--size",
            "600",
            "--reps",
            "1",
            "--questions",
            "4",
            "--clients",
            "4",
            "--seconds",
            "1",
            "--db",
            str(tmp_path / "tiny.db"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "research / floor" in result.stdout
    assert "built-in / research" in result.stdout
    assert "600 items + 300 sources; 4 questions" in result.stdout
    assert "under load: 4 clients" in result.stdout and "research p99 / p50" in result.stdout


def test_known_item_bench_prints_both_recalls_and_the_plugin_keeps_up():
    """A short run of the known-item benchmark. Recall is a correctness target (speed is not):
    the plugin finds known items at least as often as dbrain's own order."""
    result = subprocess.run(
        [
            sys.executable,
            str(BENCH.parent / "bench_known_item.py"),
            "--size",
            "3000",
            "--items",
            "60",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    recalls = re.findall(r"^(three|the three).*?(\d\.\d{3})\s+(\d\.\d{3})", result.stdout, re.M)
    assert len(recalls) == 2, result.stdout
    for _, plugin, dbrain in recalls:
        assert float(plugin) >= float(dbrain), result.stdout


def test_web_bench_runs_and_prints_ratios():
    result = subprocess.run(
        [sys.executable, str(BENCH_WEB), "--latency-ms", "20", "--reps", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "all / single" in result.stdout
    assert "plugin time on top" in result.stdout


def test_answer_bench_runs_and_prints_what_answering_adds():
    result = subprocess.run(
        [sys.executable, str(BENCH.parent / "bench_answer.py"), "--reps", "1", "--questions", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "answering adds" in result.stdout and "answer stage (in the pack)" in result.stdout


def test_load_test_runs_clean_and_reports():
    """A short run of the load test: no errors, no duplicate or lost promotion (it exits
    non-zero on those), every hostile request refused, and the report printed."""
    result = subprocess.run(
        [sys.executable, str(BENCH.parent / "bench_load.py"), "--clients", "4", "--seconds", "4"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "errors: 0" in result.stdout
    assert "duplicate rows: 0; lost: 0" in result.stdout
    assert "plain research p99 / p50" in result.stdout
