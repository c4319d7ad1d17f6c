#!/usr/bin/env bash
# Set up, build, and run every test (unit, integration and differential).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/build.sh
cd build
ctest --output-on-failure -j"$(nproc)" --timeout 600
