#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails when code of vgpu outside the platform layer (core/base/src/platform, docs/platforms.md)
calls the OS directly: POSIX or Win32 headers, dynamic loading, file-descriptor calls, process
and thread calls, compiler CPU probes. Usage: os_calls_test.py <repository root>.

The library, its tools and its Python and MPI layers are checked; tests and benchmarks may
make hostile directories and time things with whatever the OS offers. Every offender is
printed with its line, at once."""
import pathlib
import re
import sys

CHECKED = ["core", "cache", "backends", "fallback", "mpi", "python/src", "tools/probe"]
PLATFORM = "core/base/src/platform/"
SUFFIXES = {".cpp", ".hpp", ".h", ".cc", ".cu", ".inl"}

HEADERS = re.compile(r'#\s*include\s*<(unistd\.h|fcntl\.h|dlfcn\.h|pwd\.h|pthread\.h|dirent\.h|sys/[\w/]+\.h|'
                     r'link\.h|windows\.h|winbase\.h|winuser\.h|wingdi\.h|processthreadsapi\.h|io\.h|direct\.h|bcrypt\.h|'
                     r'shlobj\.h|mach/[\w/]+\.h)>')
CALLS = re.compile(r"\b(dlopen|dlsym|dlclose|dlerror|dladdr|LoadLibrary\w*|GetProcAddress|FreeLibrary|"
                   r"getpid|gettid|getuid|getpwuid\w*|sysconf|isatty|openat|mkdirat|unlinkat|renameat|fstatat|"
                   r"fstat|lstat|futimens|fchmod|fchown|fsync|pread|getrandom|arc4random\w*|fdopendir|readdir|"
                   r"pthread_setname_np|pthread_self|dl_iterate_phdr|__builtin_cpu_supports|__builtin_cpu_init|"
                   r"CreateFile\w*|GetLastError|SetThreadDescription|CreateWindowEx\w*|RegisterClass\w*|ChoosePixelFormat|"
                   r"SetPixelFormat|GetDC|DestroyWindow)\s*\(")


def strip_comments(text):
    """Blanks // and /* */ comments and string literals, keeping line numbers."""
    out = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    out = re.sub(r'"(?:\\.|[^"\\\n])*"', '""', out)
    return re.sub(r"//[^\n]*", "", out)


def main():
    root = pathlib.Path(sys.argv[1])
    offenders = []
    for folder in CHECKED:
        for path in sorted((root / folder).rglob("*")):
            rel = path.relative_to(root).as_posix()
            if path.suffix not in SUFFIXES or rel.startswith(PLATFORM) or not path.is_file():
                continue
            raw = path.read_text(encoding="utf-8", errors="replace")
            for number, (line, code) in enumerate(zip(raw.splitlines(), strip_comments(raw).splitlines()), 1):
                # Headers are matched on the raw line (their <name> is no string), calls on code.
                if HEADERS.search(line) or CALLS.search(code):
                    offenders.append(f"{rel}:{number}: {line.strip()}")
    if offenders:
        print("OS calls outside the platform layer (core/base/src/platform):")
        print("\n".join(offenders))
        print("Fix: add what is needed to vgpu/platform/*.hpp (one implementation per OS) and call that.")
        return 1
    print(f"no OS calls outside {PLATFORM} in {', '.join(CHECKED)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
