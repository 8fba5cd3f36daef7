"""Workers forked from a process that has loaded the local embedding model (ONNX
Runtime), ending as gunicorn's do: ``sys.exit()`` and a normal interpreter exit.

ONNX Runtime's native threads are not copied by ``fork()``; its exit handlers then
hung or aborted the child. Each scenario runs in a process of its own, which kills a
child still running after a minute and reports it as "hung".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")

PARENT = """
import atexit, json, multiprocessing, os, signal, sys, time
db = sys.argv[1]
os.environ["MNEMOSYNE_THREADS"] = sys.argv[2]
from mnemosyne import Mnemosyne

parent = Mnemosyne(session_id="parent", db_path=db)  # the default: the local model
parent.remember("the font is Inter")  # loads the model

def worker(body):
    sys.stdout.flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.dup2(write, 1)
        body()
        sys.exit(0)
    os.close(write)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read)
            return {"exit": "hung"}
        time.sleep(0.02)
    with os.fdopen(read) as output:
        return {"exit": os.waitstatus_to_exitcode(status), "stdout": output.read()}
"""

SCENARIOS = PARENT + """
def does_nothing():
    pass

def uses_the_inherited_instance():
    parent.remember("a worker's note")
    print(parent.recall("typeface", top_k=1)[0].content)
    sys.exit(3)

def opens_its_own_instance():
    with Mnemosyne(session_id="parent", db_path=db) as own:
        own.remember("the worker's own note")
        print(own.recall("typeface", top_k=1)[0].content)

def raises():
    raise RuntimeError("a worker's uncaught error")

def leaves_unflushed_output_and_an_atexit_handler():
    atexit.register(lambda: print("the atexit handler ran"))
    print("printed, not flushed")

def execs():
    os.execv(sys.executable, [sys.executable, "-c", "import sys; sys.exit(4)"])

def multiprocessing_worker():
    parent.remember("a multiprocessing worker's note")

results = {body.__name__: worker(body) for body in [
    does_nothing, uses_the_inherited_instance, opens_its_own_instance, raises,
    leaves_unflushed_output_and_an_atexit_handler, execs,
]}
process = multiprocessing.get_context("fork").Process(target=multiprocessing_worker)
process.start()
process.join(60)
results["multiprocessing"] = {"exit": process.exitcode if not process.is_alive() else "hung"}
if process.is_alive():
    process.kill()
parent.close()
print(json.dumps(results))
"""


def local_model_or_skip() -> None:
    pytest.importorskip("onnxruntime", reason="the 'local' extra (onnxruntime) is not installed")
    pytest.importorskip("tokenizers", reason="the 'local' extra (tokenizers) is not installed")


@pytest.mark.parametrize("threads", ["1", "2"])
def test_forked_workers_end_with_the_status_they_ask_for(tmp_path: Path, threads: str):
    local_model_or_skip()
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCENARIOS, str(tmp_path / "m.db"), threads],
            capture_output=True, text=True, timeout=600,
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the parent of the forked workers did not finish within 10 minutes")
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout.splitlines()[-1])
    exits = {name: result["exit"] for name, result in results.items()}
    assert exits == {
        "does_nothing": 0,
        "uses_the_inherited_instance": 3,
        "opens_its_own_instance": 0,
        "raises": 1,
        "leaves_unflushed_output_and_an_atexit_handler": 0,
        "execs": 4,
        "multiprocessing": 0,
    }, done.stderr
    assert results["uses_the_inherited_instance"]["stdout"] == "the font is Inter\n"
    assert results["opens_its_own_instance"]["stdout"] == "the font is Inter\n"
    assert results["leaves_unflushed_output_and_an_atexit_handler"]["stdout"] == (
        "printed, not flushed\nthe atexit handler ran\n"
    )
    assert "a worker's uncaught error" in done.stderr
    assert "terminate called" not in done.stderr


WITHOUT_ONNX_RUNTIME = """
import os, sys
from mnemosyne.embedders import _onnx_fork, local  # the embedder module, no model loaded
assert "onnxruntime" not in sys.modules
pid = os.fork()
if pid == 0:
    os._exit(0 if not _onnx_fork._exit_status_only else 1)
print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_children_of_a_process_without_onnx_runtime_exit_as_usual():
    done = subprocess.run([sys.executable, "-c", WITHOUT_ONNX_RUNTIME], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr
