# SPDX-License-Identifier: Apache-2.0
# The safetensors format for the python oracles, with json + struct only (Debian bookworm has
# no safetensors package): read a file whole, write (name, tensor) pairs back to back.
# Deliberately independent of Stoker's C++ reader and writer, which it checks.
import json
import struct
import sys

import torch

assert sys.byteorder == "little"  # the format is little-endian
# safetensors name -> torch dtype
DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
          "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32, "I16": torch.int16,
          "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool}
NAMES = {v: k for k, v in DTYPES.items()}


def read_safetensors(path):
    """(header entries in file order, tensors by name, metadata) of a safetensors file."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, e in header.items():
        begin, end = e["data_offsets"]
        raw = bytearray(data[8 + n + begin:8 + n + end])
        t = torch.frombuffer(raw, dtype=DTYPES[e["dtype"]]) if raw else \
            torch.empty(0, dtype=DTYPES[e["dtype"]])
        tensors[name] = t.reshape(e["shape"])
    return header, tensors, metadata


def write_safetensors(path, tensors, metadata=None):
    """Writes (name, tensor) pairs (or a dict) back to back, in the order given."""
    items = tensors.items() if isinstance(tensors, dict) else tensors
    header = {"__metadata__": metadata} if metadata else {}
    blobs, offset = [], 0
    for name, t in items:
        raw = t.detach().contiguous().numpy().tobytes()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
