"""The repository never shadows the standard library's ``platform`` module: no ``platform.py``
or ``platform/__init__.py`` in any folder that Python puts on ``sys.path`` when a script or
test from it runs (numpy imports ``platform``; a shadow breaks every import)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_nothing_is_importable_as_platform():
    skip = {".venv", ".git", "node_modules"}
    shadows = [
        p.relative_to(ROOT)
        for p in ROOT.rglob("platform*")
        if not skip & set(p.relative_to(ROOT).parts)
        and (p.name == "platform.py" or (p.is_dir() and (p / "__init__.py").exists()))
    ]
    assert shadows == []
    for folder in ("benchmarks", "examples", "tests", "."):
        out = subprocess.run(
            [sys.executable, "-c", "import platform; print(platform.python_version())"],
            cwd=ROOT / folder,
            capture_output=True,
            text=True,
            check=True,
        )
        assert out.stdout.strip() == ".".join(map(str, sys.version_info[:3]))
