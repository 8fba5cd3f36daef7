"""Every snippet of the user's description (SEED.md), run verbatim in its own process.

The snippets use the absolute paths ``/data`` and ``/backups``; they must work on a
machine where those folders do not exist yet. The test creates nothing else there
and removes both folders afterwards, so it refuses to run where they already exist.
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

SNIPPETS = Path(__file__).parent / "seed_snippets"
SEED = Path(__file__).parents[2] / "shared" / "SEED.md"
ROOTS = (Path("/data"), Path("/backups"))


def run_snippet(name: str, *extra: str) -> str:
    code = [sys.executable, str(SNIPPETS / name)] if not extra else [sys.executable, "-c", extra[0]]
    result = subprocess.run(code, capture_output=True, text=True, timeout=120, cwd=SNIPPETS)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def seed_paths():
    if any(root.exists() for root in ROOTS):
        pytest.skip("/data or /backups already exists; the verbatim seed snippets would write into it")
    try:
        yield
    finally:
        for root in ROOTS:
            shutil.rmtree(root, ignore_errors=True)


def test_snippets_are_verbatim_copies_of_the_seed():
    if not SEED.exists():
        pytest.skip(f"{SEED} is not beside this checkout")
    seed = SEED.read_text(encoding="utf-8")
    for snippet in sorted(SNIPPETS.glob("*.py")):
        assert snippet.read_text(encoding="utf-8").rstrip("\n") in seed, snippet.name


def test_long_running_task_story(seed_paths):
    run_snippet("1_session_persistence.py")
    assert Path("/data/memories.db").is_file()

    # A new process reconnects and gets its context back, printed in full.
    printed = run_snippet("2_resuming.py").splitlines()
    assert "Next step: implement responsive navigation component." in printed
    assert "Completed hero section design. User approved color palette." in printed

    run_snippet("3_scope.py")
    other_session = (
        "from mnemosyne import Mnemosyne\n"
        "mem = Mnemosyne(session_id='another-agent', db_path='/data/memories.db')\n"
        "print([str(m) for m in mem.recall('CSS file design system', top_k=10)])\n"
    )
    seen = run_snippet("", other_session)
    assert "Website uses the company design system v3." in seen
    assert "main.scss" not in seen  # session-scoped: invisible to other sessions

    run_snippet("4_backup.py")
    assert Path("/backups/pre-deploy.bak").is_file()
    with sqlite3.connect("/data/memories.db") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (4,)
    printed = run_snippet("2_resuming.py")
    assert "Next step: implement responsive navigation component." in printed


def test_weekly_report_agent(seed_paths):
    # compile_report is the user's own function; the snippet only calls it.
    driver = (
        "import runpy, types\n"
        "def compile_report(items):\n"
        "    return types.SimpleNamespace(summary=f'Weekly report from {len(items)} updates')\n"
        "snippet = runpy.run_path('5_weekly_report.py', init_globals={'compile_report': compile_report})\n"
        "print(snippet['generate_weekly_report']().summary)\n"
        "print(snippet['generate_weekly_report']().summary)\n"
    )
    assert run_snippet("", driver).splitlines() == [
        "Weekly report from 0 updates",
        "Weekly report from 1 updates",
    ]
    check = (
        "from mnemosyne import Mnemosyne\n"
        "mem = Mnemosyne(session_id='weekly-reports', db_path='/data/reports.db')\n"
        "print(mem.get_stats().total)\n"
        "print(mem.recall('weekly report updates', source='weekly-report')[0].importance)\n"
    )
    assert run_snippet("", check).splitlines() == ["2", "0.7"]
