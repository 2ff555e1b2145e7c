#!/usr/bin/env bash
# Packs the Python packages a lent CUDA machine lacks (its image has torch, numpy, scipy, pytest,
# lxml; not warp-lang, trimesh, yourdfpy or coal) into chunks small enough for the device tool's
# 64 MiB per call, under .gpu/ (ignored by git: add `/.gpu/` to .git/info/exclude), plus a
# clean export of HEAD in .gpu/src so that uncommitted work in the checkout does not travel
# into the measurement. Carry .gpu/p1, .gpu/p2, then .gpu/p3 + .gpu/src in three back-to-back
# calls and run tools/gpu_check.sh in the last one. Headers, static libraries and Warp's
# examples are left out (about 500 MB installed, 130 MB as xz).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${GPU_PYTHON_VERSION:-3.12}
work=$(mktemp -d)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PY" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d "$work/whl" \
    warp-lang==1.19.0 yourdfpy==0.0.60 trimesh==5.2.0 pycollada==0.9.3 coal==3.0.3 libcoal==3.0.3 \
    eigenpy==3.13.0 cmeel==0.62.0 cmeel-boost==1.90.0 cmeel-octomap==1.10.0 cmeel-qhull==8.0.2.1 \
    cmeel-assimp==6.0.5 cmeel-zlib==1.3.2 cmeel-console-bridge==1.0.2.3 cmeel-tinyxml2==11.0.0 \
    cmeel-urdfdom==6.0.0
python3 -m pip install -q --no-index --no-deps --no-compile --target "$work/site" --python-version "$PY" \
    --implementation cp --only-binary=:all: --platform manylinux_2_28_x86_64 --platform any "$work"/whl/*.whl
rm -rf "$work/site/cmeel.prefix/include" "$work/site/warp/examples"
find "$work/site" -name "*.a" -delete
(cd "$work/site" && tar cf - warp warp_lang-*.dist-info | xz -T0 -6 >"$work/warp.tar.xz")
(cd "$work/site" && tar cf - --exclude=./warp --exclude='./warp_lang*' . | xz -T0 -6 >"$work/rest.tar.xz")
rm -rf .gpu && mkdir -p .gpu/p1 .gpu/p2 .gpu/p3 .gpu/src
stat -c %s "$work/warp.tar.xz" >.gpu/p3/warp_bytes
cat "$work/warp.tar.xz" "$work/rest.tar.xz" | split -b 43M - "$work/part-"
mv "$work/part-aa" .gpu/p1/ && mv "$work/part-ab" .gpu/p2/ && mv "$work/part-ac" .gpu/p3/
git archive HEAD | tar x -C .gpu/src
rm -rf "$work"
du -sh .gpu/*
