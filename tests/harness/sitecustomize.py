"""Loaded by the Pythons the suite's `gpubottle` commands start (tests/conftest.py puts this folder
first on their PYTHONPATH; tests/check_fixes, which time whole runs as a user sees them, do not).

Registered before anything else, this runs after every atexit handler of the script's: it moves the
objects left to the GC's permanent generation, so the interpreter's last collection does not walk
torch's. That collection alone takes 0.9-1.0 s of CPU in every process that imported torch._dynamo
(torch.optim does), ~75 processes a suite on 2 cores. Cyclic garbage left at exit then keeps its
__del__ unrun, as Python allows; no test is about how long Python's own teardown takes.

The youngest generation is also collected every 50,000 allocations instead of 700: importing torch and
torch._dynamo (every process that uses torch.optim) allocates millions of objects, none of them
garbage, and the collections among them cost 0.6-0.7 s of CPU a process (3.5-4.0 s -> 2.9-3.3 s
measured). Cyclic garbage waits longer for its collection; no test measures when it is collected.
"""

import atexit
import gc

gc.set_threshold(50_000, 20, 20)
atexit.register(gc.freeze)
