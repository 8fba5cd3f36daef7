"""The public surface is pinned: changing it is a deliberate act."""

import mnemosyne
from mnemosyne import errors


def test_exported_names():
    assert mnemosyne.__all__ == [
        "BackupError",
        "CorruptDatabaseError",
        "DatabaseBusyError",
        "DiskFullError",
        "DoctorReport",
        "EmbedderError",
        "EmbedderInputError",
        "EmbedderMismatchError",
        "Episode",
        "ImportInterrupted",
        "InvalidInputError",
        "LeaseHeldError",
        "Memory",
        "MemoryNotFoundError",
        "MissingDependencyError",
        "Mnemosyne",
        "MnemosyneError",
        "NotADatabaseError",
        "ReadOnlyDatabaseError",
        "SchemaVersionError",
        "SleepReport",
        "Stats",
        "StorageError",
        "__version__",
        "get_stats",
        "recall",
        "remember",
    ]


def test_every_error_is_a_mnemosyne_error_with_a_code():
    classes = [obj for obj in vars(errors).values() if isinstance(obj, type) and issubclass(obj, Exception)]
    codes = set()
    for cls in classes:
        assert issubclass(cls, mnemosyne.MnemosyneError)
        assert cls.code not in codes, f"duplicate code {cls.code}"
        codes.add(cls.code)
        assert getattr(mnemosyne, cls.__name__) is cls


def test_importing_the_package_stays_light():
    import subprocess
    import sys

    heavy = "('numpy', 'onnxruntime', 'tokenizers', 'mcp')"
    code = f"import sys, mnemosyne; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
