"""On an install without optional extras, the CLI works and names the missing extra.

A fresh virtualenv without pip stands in for ``pip install mnemosyne-agent-memory``:
it sees the standard library, the package's source and its one core dependency
(numpy), and nothing else: no mcp, no onnxruntime.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import venv
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
COMMANDS = ("remember", "recall", "get", "update", "forget", "stats", "backup", "verify-backup",
            "restore", "export", "import", "mcp")


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bare-venv")
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    python = root / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip())
    (site / "mnemosyne-src.pth").write_text(f"{SRC}\n")
    # The core dependency, linked in as pip would have installed it.
    spec = importlib.util.find_spec("numpy")
    assert spec is not None and spec.origin is not None
    numpy_dir = Path(spec.origin).parent
    for name in ("numpy", "numpy.libs"):
        if (numpy_dir.parent / name).exists():
            os.symlink(numpy_dir.parent / name, site / name)
    return python


def cli(python: Path, *argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "mnemosyne", *argv], capture_output=True, text=True,
                          timeout=60, cwd=cwd)


def test_the_environment_really_is_bare(bare_python: Path):
    probe = (
        "import importlib.util as u; print([m for m in ('mcp', 'onnxruntime', 'pytest') if u.find_spec(m)])"
    )
    out = subprocess.run([str(bare_python), "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_help_works_for_every_command(bare_python: Path):
    result = cli(bare_python, "--help")
    assert result.returncode == 0, result.stderr
    assert all(command in result.stdout for command in COMMANDS)
    # Every command's help, in one process of the bare interpreter (each exits 0 via argparse).
    script = (
        "import contextlib, io\nfrom mnemosyne.interfaces.cli import main\n"
        f"for command in {COMMANDS!r}:\n"
        "    out = io.StringIO()\n"
        "    with contextlib.redirect_stdout(out):\n"
        "        try:\n            main([command, '--help'])\n"
        "        except SystemExit as exc:\n            assert exc.code == 0, command\n"
        "    assert out.getvalue().startswith('usage: mnemosyne ' + command), command\n"
        "print('ok')\n"
    )
    helps = subprocess.run([str(bare_python), "-c", script], capture_output=True, text=True, timeout=60)
    assert helps.stdout.strip() == "ok", helps.stderr


def test_core_commands_work_and_mcp_names_its_extra(bare_python: Path, tmp_path: Path):
    db = str(tmp_path / "memories.db")
    assert cli(bare_python, "remember", "Works without extras", "--db", db).returncode == 0
    found = cli(bare_python, "recall", "without extras", "--db", db)
    assert found.returncode == 0 and "Works without extras" in found.stdout

    mcp = cli(bare_python, "mcp", "--db", db)
    assert mcp.returncode == 3
    assert "pip install 'mnemosyne-agent-memory[mcp]'" in mcp.stderr
    assert "Traceback" not in mcp.stderr
