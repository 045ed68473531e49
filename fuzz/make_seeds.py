#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
# Writes the fuzzing seeds in fuzz/corpus/<target>/ (committed; rerun only to change them).
# Images come from OpenCV's sample photos (opencv-doc) re-encoded by Pillow and cjpeg in the
# variants the decoder branches on; list files and safetensors files are written here from
# their formats. Names: ok-* must be accepted, bad-* refused (tests/fuzz/replay_test.cc).
# Needs Debian's python3 with python3-pil and cjpeg (scripts/deps.sh --test).
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
PHOTOS = "/usr/share/doc/opencv-doc/examples/data"


def out_dir(target):
    d = os.path.join(HERE, "corpus", target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def prefix(flags, x, y, w, h, out_w, out_h):
    # fuzz/image_decode_entry.cc: flags, region x y w h as u16 fractions of 32768 (1.0 = the whole
    # extent), out_w - 1, out_h - 1.
    return struct.pack("<B4HBB", flags, x, y, w, h, out_w - 1, out_h - 1)


FULL = (0, 0, 32768, 32768)
CENTRE = (8192, 8192, 16384, 16384)


def encoded(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, fmt, **kw)
    return b.getvalue()


def cjpeg(im, *args):
    with tempfile.TemporaryDirectory() as t:
        src = os.path.join(t, "in.ppm")
        im.save(src)
        return subprocess.run(["cjpeg", *args, src], check=True, capture_output=True).stdout


def images():
    d = out_dir("image_decode")
    photo = Image.open(os.path.join(PHOTOS, "fruits.jpg")).convert("RGB").resize((96, 72))
    odd = photo.resize((37, 23))
    seeds = {
        # Real JPEGs as the camera or editor wrote them.
        "ok-jpeg-real-linuxlogo": (prefix(7, *CENTRE, 40, 30),
                                   open(os.path.join(PHOTOS, "LinuxLogo.jpg"), "rb").read()),
        "ok-jpeg-real-happyfish": (prefix(3, *FULL, 224, 224),
                                   open(os.path.join(PHOTOS, "HappyFish.jpg"), "rb").read()),
        "ok-jpeg-420": (prefix(7, *CENTRE, 12, 9), encoded(photo, "JPEG", quality=75)),
        "ok-jpeg-444": (prefix(3, *FULL, 24, 18), encoded(photo, "JPEG", subsampling=0)),
        "ok-jpeg-422": (prefix(1, *CENTRE, 48, 36), encoded(photo, "JPEG", subsampling=1)),
        "ok-jpeg-gray": (prefix(6, *FULL, 8, 8), encoded(photo.convert("L"), "JPEG")),
        "ok-jpeg-cmyk": (prefix(7, *CENTRE, 16, 16), encoded(photo.convert("CMYK"), "JPEG")),
        "ok-jpeg-odd-size": (prefix(7, 30000, 30000, 2768, 2768, 1, 1), encoded(odd, "JPEG")),
        "ok-jpeg-progressive": (prefix(7, *CENTRE, 10, 10), cjpeg(photo, "-progressive")),
        "ok-jpeg-restart": (prefix(3, *CENTRE, 20, 20), cjpeg(photo, "-restart", "1")),
        "ok-jpeg-arithmetic": (prefix(7, *FULL, 5, 5), cjpeg(photo, "-arithmetic")),
        "ok-jpeg-out-of-range-region": (prefix(7, 60000, 60000, 65535, 65535, 256, 256),
                                        encoded(photo, "JPEG")),
        "ok-png": (prefix(7, *CENTRE, 20, 20), encoded(photo, "PNG")),
        "ok-png-gray-alpha": (prefix(0, *FULL, 20, 20), encoded(odd.convert("LA"), "PNG")),
        "ok-bmp": (prefix(4, *CENTRE, 20, 20), encoded(odd, "BMP")),
        "ok-webp": (prefix(4, *FULL, 20, 20), encoded(odd, "WEBP", quality=50)),
        "ok-webp-lossless": (prefix(4, *FULL, 20, 20), encoded(odd, "WEBP", lossless=True)),
        "ok-tiff": (prefix(4, *FULL, 20, 20), encoded(odd, "TIFF")),
        "ok-ppm": (prefix(4, *CENTRE, 20, 20), encoded(odd, "PPM")),
        "ok-pgm": (prefix(4, *CENTRE, 20, 20), encoded(odd.convert("L"), "PPM")),
    }
    whole = encoded(photo, "JPEG")
    seeds["bad-jpeg-truncated"] = (prefix(3, *FULL, 20, 20), whole[: len(whole) // 2])
    seeds["bad-jpeg-header-only"] = (prefix(3, *FULL, 20, 20), whole[:20])
    png = encoded(photo, "PNG")
    seeds["bad-png-truncated"] = (prefix(0, *FULL, 20, 20), png[: len(png) // 2])
    seeds["bad-empty"] = (prefix(0, *FULL, 1, 1), b"")
    seeds["bad-text"] = (prefix(0, *FULL, 1, 1), b"not an image\n")
    for name, (p, data) in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(p + data)


def list_files():
    d = out_dir("list_file")
    seeds = {
        "ok-simple": "train/cat/1.jpg 0\ntrain/dog/2.jpg 1\n",
        "ok-spaces-comments-crlf": "# a comment\r\n\r\n  a b/c d.jpg \t 3\r\nx.png\t0\r\n",
        "ok-no-final-newline": "one.jpg 7",
        "bad-no-label": "a.jpg\n",
        "bad-negative-label": "a.jpg -1\n",
        "bad-label-not-a-number": "a.jpg cat\n",
        "bad-only-comments": "# nothing\n\n   \n",
        "bad-empty": "",
    }
    for name, text in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(text.encode())


def safetensors_bytes(tensors, metadata=None, header=None, tail=b""):
    # tensors: (name, dtype, shape, raw bytes), laid out back to back.
    h, data = {}, b""
    if metadata is not None:
        h["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        h[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = (header if header is not None else json.dumps(h)).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data + tail


def safetensors():
    d = out_dir("safetensors")
    f32 = struct.pack("<6f", 1, 2, 3, 4, 5, 6)
    i64 = struct.pack("<q", 42)
    good = [("conv.weight", "F32", [2, 3], f32), ("bn.num_batches_tracked", "I64", [], i64)]
    seeds = {
        "ok-two-tensors": safetensors_bytes(good),
        "ok-metadata": safetensors_bytes(good, {"format": "pt", "epoch": "3"}),
        "ok-empty-tensor": safetensors_bytes([("e", "F16", [0, 4], b""), ("b", "BOOL", [2], b"\1\0")]),
        "ok-no-tensors": safetensors_bytes([]),
        "bad-truncated": safetensors_bytes(good)[:-3],
        "bad-trailing-bytes": safetensors_bytes(good, tail=b"xx"),
        "bad-not-json": safetensors_bytes([], header="{not json"),
        "bad-duplicate-name": safetensors_bytes(
            [], header='{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},'
                       '"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', tail=b"\0"),
        "bad-overlap": safetensors_bytes(
            [], header='{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},'
                       '"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}', tail=b"\0\0\0"),
        "bad-size-mismatch": safetensors_bytes(
            [], header='{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}', tail=b"\0" * 4),
        "bad-unknown-dtype": safetensors_bytes(
            [], header='{"a":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}}', tail=b"\0"),
        "bad-metadata-not-string": safetensors_bytes(good, {"epoch": 3}),
        "bad-header-length": struct.pack("<Q", 1 << 62) + b"{}",
        "bad-short": b"\1\2\3",
    }
    for name, data in seeds.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    if shutil.which("cjpeg") is None:
        sys.exit("make_seeds.py: cjpeg not found (Debian: libjpeg-turbo-progs)")
    images()
    list_files()
    safetensors()
