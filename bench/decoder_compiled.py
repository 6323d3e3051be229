"""The decoder with its ground scan in C, built at bench time: what a compiled extension would give.

Nothing here ships. `build()` compiles `decoder_scan.c` with the machine's C compiler into
a temporary directory and imports it; `compiled_decoder()` makes a copy of
`paneboard_protocol.decoder.Decoder` whose ground-scan block (between the
`# ground scan:` and `# end of ground scan` comments of decoder.py) is one call of the
C function, and nothing else differs, so the two can be compared event for event.

Used as a pytest plugin (`-p decoder_compiled`, with `PB_DECODER_SCAN_SO` naming a built
module and `PB_DECODER_SCAN_FN` its `find` or `find_scalar`), it puts that copy in place
of `Decoder` everywhere in `paneboard_protocol`, so the decoder's own tests run against
it: `bench/decoder.py --compiled` does that.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import inspect
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import types
from pathlib import Path
from typing import Any

from paneboard_protocol import decoder as _decoder

SOURCE = Path(__file__).resolve().parent / "decoder_scan.c"
_BLOCK = re.compile(r"(?m)^( *)# ground scan:.*\n(?:.*\n)*?\1# end of ground scan\n")


def build(out_dir: Path) -> tuple[types.ModuleType | None, str]:
    """Compile and import the scan; (module, the command) or (None, why not)."""
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if not cc:
        return None, "no C compiler found (cc, gcc, clang or $CC)"
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        return None, f"no Python.h in {include} (the python3-dev headers)"
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    target = out_dir / f"decoder_scan{suffix}"
    cmd = [cc, "-O2", "-shared", "-fPIC", f"-I{include}", str(SOURCE), "-o", str(target)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return None, f"{' '.join(cmd)} failed: {done.stderr.strip()[:500]}"
    return load(target), " ".join(cmd)


def load(path: Path) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("decoder_scan", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compiled_decoder(find: Any) -> type[_decoder.Decoder]:
    """`Decoder` with its ground scan replaced by `find(data, i)` (the C function)."""
    source = inspect.getsource(_decoder)
    block = _BLOCK.search(source)
    if block is None:
        raise RuntimeError("decoder.py has no '# ground scan:' ... '# end of ground scan' block any more")
    indent = block.group(1)
    patched = source[: block.start()] + f"{indent}j = _compiled_find(data, i)\n" + source[block.end() :]
    module = types.ModuleType("paneboard_protocol._decoder_compiled_scan")
    module.__dict__["_compiled_find"] = find
    sys.modules[module.__name__] = module
    exec(compile(patched, f"<{_decoder.__file__} with a compiled ground scan>", "exec"), module.__dict__)
    cls: type[_decoder.Decoder] = module.Decoder
    return cls


def pytest_configure(config: Any) -> None:
    """Plugin: every `Decoder` of paneboard_protocol becomes the compiled-scan copy."""
    module = load(Path(os.environ["PB_DECODER_SCAN_SO"]))
    cls = compiled_decoder(getattr(module, os.environ.get("PB_DECODER_SCAN_FN", "find")))
    original = _decoder.Decoder
    for name, module in list(sys.modules.items()):
        if name.startswith("paneboard_protocol") and getattr(module, "Decoder", None) is original:
            module.Decoder = cls  # type: ignore[attr-defined]
