# SPDX-License-Identifier: Apache-2.0
"""The package imports from the build tree and has its version and error classes."""
import re

import vgpu


def test_version_is_the_librarys():
    assert re.fullmatch(r"\d+\.\d+\.\d+", vgpu.__version__)


def test_error_classes_share_one_base():
    for name in ("InvalidArgument", "NotSupported", "CompileError", "OutOfMemory", "DeviceLost",
                 "IoError", "Unavailable", "InternalError", "Timeout"):
        cls = getattr(vgpu, name)
        assert issubclass(cls, vgpu.Error), name
        assert cls.__module__ == "vgpu", name
    assert issubclass(vgpu.InvalidArgument, ValueError)
    assert issubclass(vgpu.OutOfMemory, MemoryError)
    assert issubclass(vgpu.Timeout, TimeoutError)
