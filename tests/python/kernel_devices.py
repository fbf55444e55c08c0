# SPDX-License-Identifier: Apache-2.0
"""Devices the kernel tests run on: index 0 of every backend, each a pytest param that skips
with vgpu's own reason where the backend or device is missing here (never a silent pass).
Uses vgpu.devices() when the module has it, else tries every backend's first device."""
import numpy as np
import pytest

import vgpu

BACKENDS = ("cuda", "vulkan", "opengl", "cpu")


def _ids():
    ids = []
    devices = getattr(vgpu, "devices", None)
    if devices is not None:
        try:
            for d in devices():
                i = d if isinstance(d, str) else getattr(d, "id", None)
                i = i() if callable(i) else i
                if isinstance(i, str):
                    ids.append(i)
        except Exception:  # noqa: BLE001 — fall back to probing
            ids = []
    found = {i.split(":")[0] for i in ids}
    # Every backend appears once at least, so a missing one is a reported skip.
    return ids + [f"{b}:0" for b in BACKENDS if b not in found]


DEVICE_IDS = _ids()
_reasons = {}


def open_or_skip(device_id):
    """Returns device_id after checking a kernel can be built there; skips with the reason if not."""
    if device_id not in _reasons:
        try:
            vgpu.PersistentKernel("add", (4,), device=device_id)
            _reasons[device_id] = None
        except vgpu.Error as e:
            _reasons[device_id] = f"{device_id}: {e}"
    if _reasons[device_id]:
        pytest.skip(_reasons[device_id])
    return device_id


@pytest.fixture(params=DEVICE_IDS)
def device(request):
    return open_or_skip(request.param)


def backend(device_id):
    return device_id.split(":")[0]


def rng(seed):
    return np.random.default_rng(seed)
