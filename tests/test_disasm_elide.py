"""`dlvm disasm` and `dlvm opt` show the code of a model with large weights without printing
every weight; `--weights` gives the full, round-trippable text."""
from __future__ import annotations

import numpy as np

import isa.bytecode as bc
from cli import main as cli_main
from isa.builder import ModuleBuilder


def big_module():
    mb = ModuleBuilder("big")
    f = mb.function("main", [("x", "f32[N, 100]")], ["f32[N, 64]"])
    w = mb.constant("w", np.random.default_rng(0).standard_normal((100, 64)).astype(np.float32))
    b = mb.constant("b", np.arange(64, dtype=np.float32))
    f.ret(f.add(f.matmul(f.arg("x"), w), b))
    return mb.finish()


def test_large_constants_are_summarized(tmp_path, capsys):
    path = tmp_path / "big.dlbc"
    path.write_bytes(bc.encode(big_module()))
    assert cli_main(["disasm", str(path)]) == 0
    out = capsys.readouterr().out
    assert "const @w : f32[100, 64] = elided  ; 6400 values" in out and "sha256" in out
    assert "const @b : f32[64] = [0.0, 1.0, 2.0" in out      # small ones stay
    assert len(out) < 2000
    text = tmp_path / "big.dlasm"
    text.write_text(out)
    assert cli_main(["asm", str(text), "-o", str(tmp_path / "x.dlbc")]) == 1
    assert "left out of this listing" in capsys.readouterr().err


def test_weights_flag_round_trips(tmp_path, capsys):
    src = tmp_path / "src.dlasm"
    src.write_text("")
    path = tmp_path / "big.dlbc"
    path.write_bytes(bc.encode(big_module()))
    assert cli_main(["disasm", "--weights", str(path), "-o", str(src)]) == 0
    assert cli_main(["asm", str(src), "-o", str(tmp_path / "a.dlbc")]) == 0
    assert cli_main(["disasm", "--weights", str(tmp_path / "a.dlbc"), "-o",
                     str(tmp_path / "b.dlasm")]) == 0
    assert cli_main(["asm", str(tmp_path / "b.dlasm"), "-o", str(tmp_path / "b.dlbc")]) == 0
    assert (tmp_path / "a.dlbc").read_bytes() == (tmp_path / "b.dlbc").read_bytes()
    capsys.readouterr()
    assert cli_main(["opt", str(path)]) == 0
    assert "elided" in capsys.readouterr().out
    assert cli_main(["opt", "--weights", str(path)]) == 0
    assert "elided" not in capsys.readouterr().out
