#!/usr/bin/env bash
# tests/docs/kernel_error_table.sh CHIP: the held-out error table of CHIP's calibrated kernel
# model as `trnsim calibrate --chip CHIP` prints it, read from the chip file it wrote
# (topologies/chips/CHIP.yaml, which CheckedInCalibration holds to calibrate's output).
awk '/^kernel_model:/ { k = 1 }
     k && /^  [a-z_]+:$/ { c = $1 }
     k && / mape:/ { m = $2 }
     k && / max_error:/ { print c " MAPE " m ", max " $2 }' "topologies/chips/$1.yaml"
