"""Which launches an interpreter started before the options' parse can serve (launch/prestart.py)."""

from gpubottle.launch import prestart


def test_start_time_variables_decide():
    base = {"PATH": "/bin", "PYTHONPATH": "/a", "LANG": "C.UTF-8"}
    assert prestart.compatible(base, {**base, "PATH": "/usr/bin", "NEW": "1", "GPUBOTTLE_CHILD": "{}"})
    for changed in ({**base, "PYTHONPATH": "/b"}, {**base, "PYTHONMALLOC": "malloc"},
                    {**base, "LD_PRELOAD": "x.so"}, {k: v for k, v in base.items() if k != "LANG"}):
        assert not prestart.compatible(base, changed), changed
