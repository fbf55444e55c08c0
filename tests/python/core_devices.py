# SPDX-License-Identifier: Apache-2.0
"""Device parameters shared by the core tests (not a test module itself): one pytest param per
device vgpu.devices() found, and one skipped param (with the backend's reason) per backend that
is unavailable here, so a missing backend shows as a skip, never as a silent pass."""
import pytest

import vgpu


def device_params():
    params = []
    infos = vgpu.devices()
    for status in vgpu.backends():
        mine = [i for i in infos if i.backend == status.name]
        if status.available and mine:
            params += [pytest.param(i.id, id=i.id) for i in mine]
        else:
            why = status.reason or "excluded by VGPU_BACKEND"
            params.append(pytest.param(status.name, id=status.name,
                                       marks=pytest.mark.skip(reason=f"{status.name}: {why}")))
    return params


def random_matrix(rng, rows, cols, dtype="float32"):
    return rng.standard_normal((rows, cols)).astype(dtype)


def close(c, ref, k):
    """Float32 matmul result against a float64 reference, tolerance scaled by the inner size."""
    import numpy as np
    tol = 1e-4 * max(1.0, float(np.abs(ref).max())) * max(1, k) ** 0.5
    return np.abs(c.astype(np.float64) - ref).max() <= tol
