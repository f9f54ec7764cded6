#!/usr/bin/env bash
# Installs the official TEXT2SPARQL client (PyPI `text2sparql-client`, command
# `text2sparql`) and rdflib into a venv, with pinned versions.
#
#     eval/text2sparql/install_client.sh [VENV_DIR]   # default ~/.cache/kgfuse/text2sparql-venv
#
# The client pins `pytrec-eval` 0.5, whose sdist downloads trec_eval from GitHub while
# building, which fails on a machine that reaches only package registries. The wheel
# `pytrec-eval-terrier` provides the same `pytrec_eval` module, so it is installed in its
# place and the client itself with --no-deps; its other dependencies (from the wheel's
# metadata: SPARQLWrapper, click, fastapi, loguru, numpy<2, pydantic-settings, pyyaml,
# requests, scipy, setuptools<81, tqdm, uvicorn) are listed below at versions that
# satisfy its ranges, with every transitive dependency pinned too. rdflib is not a
# client dependency: make_gold.py and rdflib_endpoint.py use it.
#
# Idempotent: does nothing when VENV_DIR already has a working `text2sparql` at the
# pinned version, rdflib and pytrec_eval.
set -euo pipefail

VENV=${1:-$HOME/.cache/kgfuse/text2sparql-venv}
CLIENT_VERSION=2.1.0
PY=${PYTHON:-python3}

working() {
    [ -x "$VENV/bin/text2sparql" ] || return 1
    "$VENV/bin/text2sparql" --version 2>/dev/null | grep -q "text2sparql $CLIENT_VERSION " || return 1
    "$VENV/bin/python" -c 'import rdflib, pytrec_eval, yaml, SPARQLWrapper' 2>/dev/null || return 1
}

if working; then
    echo "text2sparql $CLIENT_VERSION already installed in $VENV"
    exit 0
fi

"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "the client needs Python >= 3.11")'
"$PY" -m venv "$VENV"
PIP=("$VENV/bin/pip" install --quiet --disable-pip-version-check)
"${PIP[@]}" \
    pytrec-eval-terrier==0.5.11 \
    SPARQLWrapper==2.0.0 \
    click==8.5.1 \
    fastapi==0.128.8 \
    starlette==0.52.1 \
    loguru==0.7.3 \
    numpy==1.26.4 \
    scipy==1.17.1 \
    pydantic==2.14.4 \
    pydantic-settings==2.16.3 \
    PyYAML==6.0.4 \
    requests==2.34.2 \
    'setuptools<81' \
    tqdm==4.70.1 \
    uvicorn==0.34.3 \
    rdflib==7.6.0 \
    annotated-doc==0.0.7 annotated-types==0.8.0 anyio==4.16.0 certifi==2026.10.19.post1 \
    charset-normalizer==3.5.3 h11==0.16.0 idna==3.20 pydantic_core==2.50.5 pyparsing==3.3.3 \
    python-dotenv==1.2.4 typing_extensions==4.16.0 typing-inspection==0.4.5 urllib3==2.8.0
"${PIP[@]}" --no-deps text2sparql-client==$CLIENT_VERSION

working || { echo "install_client.sh: text2sparql does not work in $VENV" >&2; exit 1; }
"$VENV/bin/text2sparql" --version
