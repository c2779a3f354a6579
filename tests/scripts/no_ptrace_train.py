"""Makes itself non-dumpable (no ptrace without CAP_SYS_PTRACE), then runs the data-starved example."""
import ctypes
import pathlib
import runpy
import sys

ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
example = pathlib.Path(__file__).resolve().parents[2] / "examples" / "data_starved.py"
sys.argv = [str(example), "--epochs", "1", "--samples", "320"]
runpy.run_path(str(example), run_name="__main__")
