# SPDX-License-Identifier: Apache-2.0
# Ctrl-C while the loader waits: KeyboardInterrupt comes promptly even though the batch
# cannot finish (its first sample is a FIFO nobody writes: the read blocks in open()), and
# once the loader is gone, and again after the interpreter exits, no worker process is left.
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

CHILD = r"""
import os, sys, time
import stoker

def children():
    pids = []
    for t in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{t}/children") as f:
            pids += [int(p) for p in f.read().split()]
    return sorted(pids)

loader = stoker.Loader(sys.argv[1], reader=sys.argv[2], batch_size=2, size=32,
                       shuffle=False, warn=False, tensors="numpy")
print("workers", *children(), flush=True)
print("waiting", flush=True)
try:
    for batch in loader:
        pass
    print("finished", flush=True)
except KeyboardInterrupt as e:
    print("interrupted", time.monotonic(), flush=True)
    error = e
sys.stdin.readline()  # the test unblocks the FIFO, then says go on
loader.close()
del loader
print("after close", *children(), flush=True)
raise error  # exits as an uncaught Ctrl-C does
"""


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("reader", ["threads:2", "processes:2"])
def test_ctrl_c_is_prompt_and_leaves_no_workers(photos, tmp_path, reader):
    fifo = tmp_path / "stuck.jpg"
    os.mkfifo(fifo)
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(photos) for f in fs)[:5]
    for f in files:
        shutil.copy(f, tmp_path)
    lst = tmp_path / "list.txt"  # paths relative to the list's directory
    lst.write_text("stuck.jpg 0\n" + "".join(f"{os.path.basename(f)} 1\n" for f in files))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(lst), reader],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    lines = queue.Queue()  # the child's stdout, read by a thread so that waits time out
    threading.Thread(target=lambda: [lines.put(x.split()) for x in child.stdout],
                     daemon=True).start()

    def line(timeout):
        try:
            return lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no line from the child in {timeout} s")

    workers = []
    try:
        workers = [int(p) for p in line(60)[1:]]
        assert line(10) == ["waiting"]
        if reader.startswith("processes"):
            assert len(workers) == 2 and all(alive(p) for p in workers)
        time.sleep(0.5)  # inside next(), blocked on the FIFO
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        got = line(5)  # without polling, never: the read stays blocked
        assert got and got[0] == "interrupted", got
        assert float(got[1]) - sent < 1.0  # the wait polls every 50 ms
        # Let the stuck read end (the sample becomes a bad file) so the loader can stop.
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        child.stdin.write("go\n")
        child.stdin.flush()
        got = line(30)
        assert got[:2] == ["after", "close"] and got[2:] == []  # no child process left
        assert child.wait(timeout=30) in (-signal.SIGINT, 128 + signal.SIGINT, 1)
    finally:
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # nobody is blocked on it
        if child.poll() is None:
            child.kill()
            child.wait()
    assert not [p for p in workers if alive(p)]
