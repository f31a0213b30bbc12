"""``portwright eval report`` and ``eval compare`` as a person runs them: the real
command, on report files written from :class:`TaskResult` models."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from tests.eval.data import cycle_report, loop_report

ROOT = Path(__file__).resolve().parents[2]


def portwright(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "portwright", *args], cwd=cwd,
                          capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "COLUMNS": "200", "HOME": str(cwd),
                               "PYTHONPATH": str(ROOT)}, timeout=120)


@pytest.fixture
def reports(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "cycle" / "report.json", tmp_path / "loop" / "report.json"
    for path, report in ((a, cycle_report()), (b, loop_report())):
        path.parent.mkdir()
        path.write_text(report.model_dump_json(indent=2))
    return a, b


def test_report_prints_the_aggregate_and_each_task(tmp_path: Path,
                                                    reports: tuple[Path, Path]) -> None:
    markdown = tmp_path / "out.md"
    done = portwright(tmp_path, "eval", "report", str(reports[0].parent),
                      "--markdown", str(markdown))
    assert done.returncode == 0, done.stderr
    assert "3 / 5 (60.0 %)" in done.stdout
    for r in cycle_report().results:
        assert r.task in done.stdout
    assert "gate" in done.stdout
    assert markdown.read_text().startswith("# portwright eval")


def test_report_json(tmp_path: Path, reports: tuple[Path, Path]) -> None:
    done = portwright(tmp_path, "eval", "report", str(reports[0]), "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["aggregate"]["resolved"] == 3
    assert len(payload["results"]) == 5


def test_compare_writes_json_markdown_and_png(tmp_path: Path,
                                              reports: tuple[Path, Path]) -> None:
    out = tmp_path / "cmp"
    done = portwright(tmp_path, "eval", "compare", str(reports[0]), str(reports[1]),
                      "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "no significant difference at n=4" in done.stdout
    assert "pair/only-cycle" in done.stdout
    payload = json.loads((out / "compare.json").read_text())
    assert payload["table"] == {"both": 1, "a_only": 2, "b_only": 0, "neither": 1}
    assert "McNemar" in (out / "compare.md").read_text()
    with Image.open(out / "compare.png") as image:
        assert image.format == "PNG"

    again = portwright(tmp_path, "eval", "compare", str(reports[0]), str(reports[1]),
                       "--out", str(out), "--json")
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)
    assert summary["p_value"] == pytest.approx(0.5)
    assert summary["files"]["png"] == str(out / "compare.png")


BAD = {
    "syntax": ('{\n  "suite": "s",\n  "mode": cycle\n}\n', "bad.json:3:", "JSON"),
    "field": (None, "bad.json: [results.2.failure]", "tired"),
    "not-a-report": ('{"rows": []}\n', "bad.json:", "not a report"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("as_json", [False, True])
def test_bad_report_exits_2_naming_the_file_and_the_fix(
        tmp_path: Path, reports: tuple[Path, Path], case: str, command: str,
        as_json: bool) -> None:
    text, where, says = BAD[case]
    if text is None:
        data = json.loads(cycle_report().model_dump_json())
        data["results"][2]["failure"] = "tired"
        text = json.dumps(data, indent=2)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    args = ["eval", command, str(bad)]
    if command == "compare":
        args += [str(reports[1]), "--out", str(tmp_path / "cmp")]
    done = portwright(tmp_path, *args, *(["--json"] if as_json else []))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    assert f"{bad.parent}/{where}" in done.stderr
    assert says in done.stderr
    assert "fix:" in done.stderr
    if as_json:
        error = json.loads(done.stdout)["error"]
        assert error["file"] == str(bad)
        assert error["fix"]
    assert not (tmp_path / "cmp").exists()


@pytest.mark.parametrize("as_json", [False, True])
def test_bad_options_exit_2(tmp_path: Path, reports: tuple[Path, Path], as_json: bool) -> None:
    flag = ["--json"] if as_json else []
    a, b = (str(p) for p in reports)
    out_file = portwright(tmp_path, "eval", "compare", a, b, "--out", a, *flag)
    assert out_file.returncode == 2
    assert f"{a}: [--out] not a folder" in out_file.stderr
    mode = portwright(tmp_path, "eval", "report", str(reports[0].parent), "--mode", "both",
                      *flag)
    assert mode.returncode == 2
    assert "[--mode]" in mode.stderr
    assert "fix: use cycle or loop" in mode.stderr
    for done in (out_file, mode):
        assert "Traceback" not in done.stderr
        if as_json:
            assert json.loads(done.stdout)["error"]["key"] in {"--out", "--mode"}
