#!/usr/bin/env bash
# Device side of tools/gpu_bundle.sh: run from the checkout's root on the CUDA machine, in the
# call that carries .gpu/p3 and .gpu/src (the earlier calls of the same warm machine carried
# .gpu/p1 and .gpu/p2). Unpacks the packages to /tmp/site and runs, from the clean export:
# the CUDA tests, then the given benchmark commands (each `timeout`-bounded), output in $OUT.
#   tools/gpu_check.sh "<pytest -k expression>" "<benchmark command>" ...
set -uo pipefail
root=$(pwd)
cp .gpu/p*/part-* /tmp/ 2>/dev/null
ls -la /tmp/part-* || exit 3
if [ ! -d /tmp/site/warp ]; then
    mkdir -p /tmp/site
    cat /tmp/part-* >/tmp/all.bin
    bytes=$(cat .gpu/p3/warp_bytes)
    head -c "$bytes" /tmp/all.bin | xz -d | tar x -C /tmp/site
    tail -c +"$((bytes + 1))" /tmp/all.bin | xz -d | tar x -C /tmp/site
fi
export PYTHONPATH=/tmp/site:/tmp/site/cmeel.prefix/lib/python3.12/site-packages:$root/.gpu/src
export PYTHONUNBUFFERED=1
cd "$root/.gpu/src"
nvidia-smi -L
python3 -c "import torch, warp, coal, trimesh, yourdfpy; print(torch.__version__, warp.__version__, torch.cuda.get_device_name())"
expr=$1; shift
if [ -n "$expr" ]; then
    timeout 240 python3 -m pytest -q -p no:warnings -p no:cacheprovider -k "$expr" tests 2>&1 | tail -25
fi
for cmd in "$@"; do
    echo "== $cmd"
    eval "$cmd"
done
