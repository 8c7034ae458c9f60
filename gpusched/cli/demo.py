"""``gpusched demo``: placeholder until the examples land (replaced below)."""


def run_demo() -> int:
    print("demo not ready")
    return 0
