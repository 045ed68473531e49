# SPDX-License-Identifier: Apache-2.0
# The GIL is released while the loader works and waits (other Python threads run meanwhile),
# and a loader may be constructed on one thread and iterated on another.
import threading
import time

import stoker


def test_other_threads_run_while_a_batch_is_made(photos):
    # serial: the whole batch (59 photos at 224) is decoded inside next(), on this thread.
    loader = stoker.Loader(photos, batch_size=59, size=224, reader="serial", tensors="numpy")
    it = iter(loader)
    count, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    time.sleep(0.05)
    before = count[0]
    t0 = time.monotonic()
    next(it)
    spent = time.monotonic() - t0
    during = count[0] - before
    stop.set()
    t.join()
    # With the GIL held for the whole call the spinner would be stuck at about 0.
    assert spent > 0.05 and during > 10_000, (spent, during)


def test_constructed_on_another_thread(photos):
    made = []
    t = threading.Thread(target=lambda: made.append(
        stoker.Loader(photos, batch_size=16, size=32, reader="processes:2")))
    t.start()
    t.join()
    assert sum(len(y) for _, y in made[0]) == 59



def test_a_second_loader_draws_no_tbb_warning(photos):
    # Indexing the second dataset while the first loader's threads live used to ask TBB for
    # more workers than the active limit: "TBB Warning: The number of workers is currently
    # limited ...", printed by TBB itself on stderr, once per process (hence a fresh one).
    import subprocess
    import sys
    code = (f"import stoker\n"
            f"a = stoker.Loader({photos!r}, batch_size=8, size=32, reader='threads:2')\n"
            f"next(iter(a))\n"
            f"b = stoker.Loader({photos!r}, batch_size=8, size=32, reader='threads:2')\n"
            f"next(iter(b))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert "TBB Warning" not in run.stderr, run.stderr
