#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Counts what a shared libvgpu exports (issue 15): every defined dynamic symbol, then the
# internal ones by kind, from the demangled `nm -D --defined-only` list.
#
#   tools/symbol_report.sh [LIB]        LIB defaults to build/lib/libvgpu.so
#   tools/symbol_report.sh --list KIND [LIB]   prints the demangled symbols of one kind
#
# Kinds (each symbol counted once, first match wins, in this order):
#   nlohmann   nlohmann:: anywhere in the name (its inline templates; must be 0)
#   tbb        tbb:: / oneapi::tbb (instantiations of TBB's templates)
#   xsimd      xsimd::
#   detail     vgpu::detail:: / vgpu::*::detail:: (vgpu's internal helpers)
#   backend    vgpu::backend:: / vgpu::cache:: / vgpu::shader:: / vgpu::kernels:: / vgpu::cpu:: /
#              vgpu::vulkan:: / vgpu::opengl:: / vgpu::cuda:: (the layers below the public API)
#   anonymous  (anonymous namespace)
#   std        std:: / __gnu_cxx:: template instantiations (not vgpu's own symbols)
#   public     the rest in namespace vgpu whose first name after vgpu:: is a word of an installed
#              header (core/{base,runtime}/include/vgpu/*.hpp): the API, its typeinfo and vtables
#   internal   the rest in namespace vgpu (DeviceImpl, KernelImpl ...: no installed header names it)
#   other      everything else (C symbols: XXH*, spv*, glslang ...)
set -euo pipefail
list=
if [[ "${1:-}" == "--list" ]]; then
  list=$2
  shift 2
fi
lib=${1:-build/lib/libvgpu.so}
[[ -e "$lib" ]] || { echo "symbol_report.sh: $lib does not exist. Fix: build the shared libvgpu (cmake --build build --target vgpu) or pass its path."; exit 2; }
# classify reads "T name" lines (type, demangled name) and prints "kind<TAB>type name".
here=$(cd "$(dirname "$0")/.." && pwd)
words=$(mktemp)
trap 'rm -f "$words"' EXIT
cat "$here"/core/base/include/vgpu/*.hpp "$here"/core/runtime/include/vgpu/*.hpp | grep -oE '[A-Za-z_][A-Za-z0-9_]*' | sort -u >"$words"
classify() {
  awk -v words="$words" 'BEGIN { while ((getline w < words) > 0) api[w] = 1 }
  {
    type = $1; $1 = ""; name = substr($0, 2)
    if (name ~ /nlohmann::/) kind = "nlohmann"
    else if (name ~ /(^|[^a-z_])(oneapi::)?tbb::/) kind = "tbb"
    else if (name ~ /xsimd::/) kind = "xsimd"
    else if (name ~ /vgpu::([a-z_]+::)*detail::/) kind = "detail"
    else if (name ~ /vgpu::(backend|cache|shader|kernels|cpu|vulkan|opengl|cuda|glsl|spirv)::/) kind = "backend"
    else if (name ~ /\(anonymous namespace\)/) kind = "anonymous"
    else if (name ~ /(^|[ (<,*&])vgpu::/ && name !~ /^(typeinfo|vtable|VTT|construction vtable|guard variable|non-virtual thunk|virtual thunk)? ?(for )?std::/ && name !~ /^(void |bool |int )?std::/) {
      rest = substr(name, index(name, "vgpu::") + 6); if (match(rest, /^[A-Za-z_][A-Za-z0-9_]*/)) first = substr(rest, 1, RLENGTH)
      kind = (first in api) ? "public" : "internal"
    }
    else if (name ~ /std::|__gnu_cxx::|__cxx11::/) kind = "std"
    else kind = "other"
    print kind "\t" type " " name
  }'
}
symbols=$(nm -D --defined-only "$lib" | awk '{ t = $2; $1 = ""; $2 = ""; sub(/^  /, ""); print t " " $0 }' |
          c++filt | classify)
if [[ -n "$list" ]]; then
  awk -F'\t' -v k="$list" '$1 == k { print $2 }' <<<"$symbols"
  exit 0
fi
total=$(wc -l <<<"$symbols")
weak=$(awk -F'\t' '{ split($2, a, " ") } a[1] ~ /^[WVuv]$/' <<<"$symbols" | wc -l)
echo "$lib: $total defined dynamic symbols ($weak weak)"
for kind in public internal nlohmann tbb xsimd detail backend anonymous std other; do
  n=$(awk -F'\t' -v k="$kind" '$1 == k' <<<"$symbols" | wc -l)
  w=$(awk -F'\t' -v k="$kind" '$1 == k { split($2, a, " "); if (a[1] ~ /^[WVuv]$/) print }' <<<"$symbols" | wc -l)
  printf '  %-10s %6d  (%d weak)\n' "$kind" "$n" "$w"
done
