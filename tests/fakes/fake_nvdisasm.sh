#!/bin/sh
# A stand-in for NVIDIA's disassembler, for the inspect tool's test (TILEFUSE_NVDISASM): checks that it was
# handed -c and an existing file, and prints three instructions as nvdisasm -c would, without line notes.
[ "$1" = "-c" ] || { echo "fake nvdisasm: expected -c first, got '$1'" >&2; exit 2; }
for a in "$@"; do last="$a"; done
[ -s "$last" ] || { echo "fake nvdisasm: no CUBIN at '$last'" >&2; exit 2; }
printf '%s\n' '        /*0000*/                   LDC R1, c[0x0][0x28] ;' \
              '        /*0010*/              @P0 LDG.E.128 R4, desc[UR4][R2.64] ;' \
              '        /*0020*/                   EXIT ;'
