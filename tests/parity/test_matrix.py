from __future__ import annotations

from pathlib import Path

import pytest

from portwright.config import PortwrightConfig
from portwright.errors import ParityFileError
from portwright.parity.markdown import cell_spans, find_tables, replace_cells, split_cells
from portwright.parity.matrix import load_rows, require_row_at, update_row
from tests.conftest import GitRepo

MATRIX = """# Kernels

Some prose with a | pipe.

```markdown
| id | status |
| --- | --- |
| in-a-fence | bogus |
```

| Row ID | Name | STATUS | spec | upstream | Notes | owner |
|:-------|------|:------:|------|----------|-------|-------|
| gemm   | GEMM | ported | [spec](specs/gemm.md) | `csrc/gemm.cu`, GemmOp | fast \\| small | ana |
| topk   | Top-k | missing | - | | | |

Not a matrix (no status column):

| id | title |
| --- | --- |
| x | y |
"""


def _config(**artifacts: object) -> PortwrightConfig:
    return PortwrightConfig.model_validate({"upstream": {"source": "../up"},
                                            "artifacts": artifacts})


def _write(tmp_path: Path, text: str, name: str = "docs/parity/kernels.md") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


def test_rows_with_lines_and_columns(tmp_path: Path) -> None:
    _write(tmp_path, MATRIX)
    rows = load_rows(tmp_path, _config())
    assert [(r.id, r.status, r.line) for r in rows] == [("gemm", "ported", 13),
                                                         ("topk", "missing", 14)]
    gemm = rows[0]
    assert gemm.title == "GEMM"
    assert gemm.spec == "specs/gemm.md"
    assert gemm.upstream == ["csrc/gemm.cu", "GemmOp"]
    assert gemm.notes == "fast | small"
    assert gemm.file == "docs/parity/kernels.md"
    assert rows[1].spec is None
    assert rows[1].upstream == []


def test_unknown_status_names_file_line_and_allowed(tmp_path: Path) -> None:
    _write(tmp_path, MATRIX.replace("| missing |", "| todo |"))
    with pytest.raises(ParityFileError) as info:
        load_rows(tmp_path, _config())
    err = info.value
    assert err.file is not None
    assert err.file.endswith("kernels.md")
    assert err.line == 14
    assert err.fix is not None
    assert "missing, partial" in err.fix


def test_custom_status_vocabulary(tmp_path: Path) -> None:
    _write(tmp_path, MATRIX.replace("| missing |", "| todo |").replace("| ported |", "| DONE |"))
    rows = load_rows(tmp_path, _config(statuses=["todo", "done"]))
    assert [r.status for r in rows] == ["done", "todo"]


def test_duplicate_ids_across_matrices(tmp_path: Path) -> None:
    _write(tmp_path, MATRIX)
    _write(tmp_path, MATRIX, "docs/parity/more.md")
    with pytest.raises(ParityFileError, match=r"already used at docs/parity/kernels\.md:13"):
        load_rows(tmp_path, _config())


def test_update_row_changes_only_that_line(tmp_path: Path) -> None:
    path = _write(tmp_path, MATRIX.replace("\n", "\r\n"))
    before = path.read_bytes()
    row = update_row(tmp_path, _config(), "topk", status="in-progress",
                     spec="specs/topk.md", notes="a|b")
    after = path.read_bytes()
    assert row.status == "in-progress"
    assert row.spec == "specs/topk.md"
    assert row.notes == "a|b"
    old_lines, new_lines = before.split(b"\r\n"), after.split(b"\r\n")
    assert len(old_lines) == len(new_lines)
    changed = [i for i, (a, b) in enumerate(zip(old_lines, new_lines, strict=True)) if a != b]
    assert changed == [13]
    assert new_lines[13] == b"| topk   | Top-k | in-progress | [spec](specs/topk.md) | | a\\|b | |"


def test_update_row_rejects_unknown_status(tmp_path: Path) -> None:
    path = _write(tmp_path, MATRIX)
    with pytest.raises(ParityFileError, match="unknown status"):
        update_row(tmp_path, _config(), "gemm", status="finished")
    assert path.read_text() == MATRIX


def test_table_in_fence_is_not_a_table() -> None:
    tables = find_tables(MATRIX)
    assert [t.line for t in tables] == [11, 18]


def test_cells_split_on_unescaped_pipes() -> None:
    assert split_cells("| a | b \\| c | `d` |") == ["a", "b | c", "`d`"]
    assert split_cells("a | b") == ["a", "b"]
    line = "|  x  | yy |   |"
    assert [line[s:e] for s, e in cell_spans(line)] == ["x", "yy", ""]
    assert replace_cells(line, {0: "longer", 2: "z"}) == "|  longer | yy | z |"


def test_many_rows_parse(tmp_path: Path) -> None:
    body = "".join(f"| r{i} | t | ported | | | |\n" for i in range(2000))
    header = "| id | title | status | spec | upstream | notes |\n|---|---|---|---|---|---|\n"
    _write(tmp_path, header + body)
    rows = load_rows(tmp_path, _config())
    assert len(rows) == 2000
    assert rows[-1].line == 2002


def test_a_run_needs_its_row_in_the_committed_matrices(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "port")
    repo.commit("matrix", {"docs/parity/kernels.md": MATRIX, "docs/parity/notes.txt": "x\n"})
    config = _config()
    require_row_at(repo.path, config, "topk", "HEAD")
    _write(repo.path, MATRIX.replace("| topk ", "| newrow | New | missing | | | | |\n| topk "))
    assert "newrow" in [r.id for r in load_rows(repo.path, config)]  # written, not committed
    with pytest.raises(ParityFileError) as info:
        require_row_at(repo.path, config, "newrow", "HEAD")
    error = info.value
    assert error.file == "docs/parity/kernels.md"
    assert "'newrow'" in error.message
    assert "gemm, topk" in error.message
    assert error.fix is not None
    assert "commit" in error.fix
    assert "portwright rows" in error.fix
    with pytest.raises(ParityFileError, match="no file matches"):
        require_row_at(repo.path, _config(matrices=["docs/other/*.md"]), "topk", "HEAD")
