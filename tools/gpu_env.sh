#!/bin/sh
# Sourced on a GPU machine without lace's Debian libraries (the lent
# device image): unpacks the .deb files carried in .debs/ under /tmp/debs
# (never over /) and points the loader there. A no-op where they exist.
if [ -d .debs ] && ! ldconfig -p 2>/dev/null | grep -q libkissfft-float; then
  mkdir -p /tmp/debs
  for f in .debs/*.deb; do dpkg -x "$f" /tmp/debs; done
  L=/tmp/debs/usr/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH="$L:$L/openblas-pthread:${LD_LIBRARY_PATH}"
fi
