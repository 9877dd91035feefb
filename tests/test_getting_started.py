"""docs/getting-started.md's shell blocks run as written, in order, in a fresh directory, with
this checkout's `dlvm` and Python first on PATH: the guide cannot rot."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "getting-started.md"


def shell_blocks() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def test_the_guide_has_commands():
    assert len(shell_blocks()) >= 6


@pytest.mark.skipif(sys.platform == "win32", reason="the guide's commands are POSIX shell")
def test_every_command_in_the_guide_runs(tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("torch")
    bin_dir = Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    env["PYTHONPATH"] = str(GUIDE.parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    if not (bin_dir / "dlvm").exists():
        pytest.skip("no dlvm command beside this Python (install the project with pip -e)")
    outputs = []
    for i, block in enumerate(shell_blocks()):
        done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"block {i} failed:\n{block}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, f"block {i}:\n{done.stderr}"
        outputs.append(done.stdout + done.stderr)
    text = "\n".join(outputs)
    assert "scale.dlasm: ok" in text
    assert "bad.dlasm:3:3: error:" in text and "inner dimensions" in text and "exit 1" in text
    assert "--dim B" in text and "exit 2" in text
    assert (tmp_path / "tiny.dlbc").exists()
