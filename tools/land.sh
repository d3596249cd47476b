#!/bin/sh
# Lands the current worktree branch on main: rebase onto main, build and run
# the tests, then fast-forward main (the /work/main worktree). Serialised by
# a lock so that concurrent landings do not race.
# Usage (inside a worktree, everything committed): sh tools/land.sh
set -e
br=$(git rev-parse --abbrev-ref HEAD)
[ "$br" = main ] && { echo "land.sh: run it from a feature worktree"; exit 1; }
[ -n "$(git status --porcelain)" ] && { echo "land.sh: commit your changes first"; exit 1; }
exec 9>/tmp/lace-land.lock
flock 9
git rebase main
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j 2
(cd build && ctest --output-on-failure -j 2)
cd /work/main
git merge --ff-only "$br"
echo "land.sh: $br landed on main at $(git rev-parse --short HEAD)"
