# SPDX-License-Identifier: Apache-2.0
# stoker.Loader against torchvision's ImageFolder with the evaluation transform (Resize,
# CenterCrop), on real photographs: labels, order and pixels.
import numpy as np
import pytest
import torch
import torchvision
from torchvision import transforms as T

import stoker


def torchvision_batches(root, size, to_tensor):
    ds = torchvision.datasets.ImageFolder(
        root, transform=T.Compose([T.Resize(size * 256 // 224), T.CenterCrop(size), to_tensor]))
    xs, ys = zip(*[ds[i] for i in range(len(ds))])
    return torch.stack(xs), torch.tensor(ys), ds


def stoker_all(root, **kw):
    loader = stoker.Loader(root, shuffle=False, transform="center", reader="threads:2", **kw)
    xs, ys = [], []
    for x, y in loader:
        xs.append(x.clone())
        ys.append(y)
    return torch.cat(xs), torch.cat(ys), loader


def test_exact_pixels_where_no_resize_is_involved(photos_256):
    # Short side 256, 224 center crop: both sides only decode and crop, so the pixels must be
    # equal bit for bit (libjpeg-turbo under both; PIL's resize to the same size is a no-op).
    want_x, want_y, ds = torchvision_batches(photos_256, 224, T.PILToTensor())
    got_x, got_y, loader = stoker_all(photos_256, batch_size=7, size=224, dtype="u8")
    assert loader.classes == ds.classes
    assert torch.equal(got_y, want_y)
    assert got_x.dtype == torch.uint8 and got_x.shape == want_x.shape
    assert torch.equal(got_x, want_x)


def test_exact_f32_normalisation(photos_256):
    # f32 is (x/255 - mean)/std as ToTensor + Normalize computes it, in float32.
    norm = T.Compose([T.ToTensor(), T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    want_x, want_y, _ = torchvision_batches(photos_256, 224, norm)
    got_x, got_y, _ = stoker_all(photos_256, batch_size=16, size=224, dtype="f32")
    assert torch.equal(got_y, want_y)
    assert torch.equal(got_x, want_x)


@pytest.mark.parametrize("size", [64, 160])
def test_pixels_close_with_resize(photos, size):
    # With a resize the two differ by design: Stoker decodes at a reduced DCT scale and
    # resizes the crop window with OpenCV, torchvision resizes the whole image with PIL's
    # antialiased bilinear, then crops. Measured on these 59 photos (u8, levels of 255):
    # mean |diff| 5.7 (size 64) and 3.6 (160), worst image 14; the same output shifted by
    # 2 pixels gives 31 and 18 (worst image 56 and 38), mirrored 59 and 62. Bounds: mean < 8,
    # every image < 22: a wrong window, flip, channel order or sample fails them.
    want_x, want_y, _ = torchvision_batches(photos, size, T.PILToTensor())
    got_x, got_y, _ = stoker_all(photos, batch_size=8, size=size, dtype="u8")
    assert torch.equal(got_y, want_y)
    per_image = (got_x.int() - want_x.int()).abs().float().flatten(1).mean(1)
    assert per_image.mean() < 8, per_image
    assert per_image.max() < 22, per_image


def test_layout_nhwc_is_the_transpose(photos_256):
    a, _, _ = stoker_all(photos_256, batch_size=8, size=224, dtype="u8", layout="nchw")
    b, _, _ = stoker_all(photos_256, batch_size=8, size=224, dtype="u8", layout="nhwc")
    assert b.shape == (a.shape[0], 224, 224, 3)
    assert torch.equal(b.permute(0, 3, 1, 2), a)


def test_numpy_gives_the_same_batches(photos):
    t = stoker.Loader(photos, batch_size=8, size=48, seed=5, reader="threads:2")
    n = stoker.Loader(photos, batch_size=8, size=48, seed=5, reader="threads:2", tensors="numpy")
    for (tx, ty), (nx, ny) in zip(t, n):
        assert isinstance(nx, np.ndarray) and nx.dtype == np.float32
        assert np.array_equal(tx.numpy(), nx)
        assert np.array_equal(ty.numpy(), ny)
