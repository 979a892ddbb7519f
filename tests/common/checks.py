"""The PASS/FAIL lines of the Python end-to-end tests, and their tally.

    from checks import check, failures, log      (tests/common on sys.path)

A test calls check(name, ok, detail) for each thing it verifies and exits
1 if `failures` is not empty, 77 when it cannot run here (meson: skipped).
"""
SKIP = 77
failures = []


def log(msg):
    print(msg, flush=True)


def check(name, ok, detail=""):
    log(f"{'PASS' if ok else 'FAIL'}: {name}{(' -- ' + detail) if detail else ''}")
    if not ok:
        failures.append(name)
    return ok
