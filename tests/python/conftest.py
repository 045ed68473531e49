# SPDX-License-Identifier: Apache-2.0
# Fixtures of the Python module's tests: real photographs (Debian's opencv-doc) as an
# ImageFolder, the same photos re-encoded with a short side of exactly 256 (where a 224
# center crop involves no resize, so pixels can be compared exactly), and the CLI binary.
# Run by ctest (tests/CMakeLists.txt) with PYTHONPATH at the built module.
import glob
import os
import shutil
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from skip_policy import skip_case  # noqa: E402

PHOTOS = "/usr/share/doc/opencv-doc/examples/data"


def photo_files():
    files = sorted(glob.glob(os.path.join(PHOTOS, "*.jpg")))
    if len(files) < 8:
        skip_case(f"no photographs in {PHOTOS} (Debian: opencv-doc, scripts/deps.sh --test)")
    return files


@pytest.fixture(scope="session")
def photos(tmp_path_factory):
    """59 real photos (colour and grey, 256 to 1282 pixels a side) in 4 classes."""
    root = tmp_path_factory.mktemp("photos")
    for i, f in enumerate(photo_files()):
        d = root / f"class{i % 4}"
        d.mkdir(exist_ok=True)
        shutil.copy(f, d / os.path.basename(f))
    return str(root)


@pytest.fixture(scope="session")
def photos_256(tmp_path_factory):
    """The photos as RGB JPEGs (quality 95) whose short side is exactly 256."""
    from PIL import Image
    root = tmp_path_factory.mktemp("photos256")
    for i, f in enumerate(photo_files()):
        im = Image.open(f).convert("RGB")
        w, h = im.size
        s = 256 / min(w, h)
        im = im.resize((max(256, round(w * s)), max(256, round(h * s))), Image.BILINEAR)
        d = root / f"class{i % 3}"
        d.mkdir(exist_ok=True)
        im.save(d / (os.path.splitext(os.path.basename(f))[0] + ".jpg"), quality=95)
    return str(root)


@pytest.fixture(scope="session")
def stoker_cli():
    exe = os.environ.get("STOKER_CLI")
    if not exe or not os.access(exe, os.X_OK):
        skip_case("STOKER_CLI is not set to the stoker executable (ctest sets it)")
    return exe
