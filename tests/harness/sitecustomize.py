"""Loaded by the Pythons the suite's `gpubottle` commands start (tests/conftest.py puts this folder
first on their PYTHONPATH; tests/check_fixes, which time whole runs as a user sees them, do not).

Registered before anything else, this runs after every atexit handler of the script's: it moves the
objects left to the GC's permanent generation, so the interpreter's last collection does not walk
torch's. That collection alone takes 0.9-1.0 s of CPU in every process that imported torch._dynamo
(torch.optim does), ~75 processes a suite on 2 cores. Cyclic garbage left at exit then keeps its
__del__ unrun, as Python allows; no test is about how long Python's own teardown takes.
"""

import atexit
import gc

atexit.register(gc.freeze)
