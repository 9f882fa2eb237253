#!/usr/bin/env python3
"""Prints python/linerate_kvagg.py's wire numbers as JSON, under the names of
include/linerate/kvagg_wire.h without its LINERATE_KV_ prefix (kv_wire_test compares):
its upper-case integer constants, the header's length and field offsets from its struct
format, and the Client's default port.

    py_wire_constants.py PYTHON_DIR
"""
import inspect
import json
import struct
import sys

sys.path.insert(0, sys.argv[1])
import linerate_kvagg as kv  # noqa: E402

out = {name: value for name, value in vars(kv).items()
       if name.isupper() and isinstance(value, int)}
fields = ["MAGIC", "VERSION", "OP", "COUNT", "STREAM", "SEQ", "RESERVED"]
layout = kv.HEADER.format.lstrip("!")
assert len(layout) == len(fields), layout
for i, field in enumerate(fields):
    out[field + "_OFF"] = struct.calcsize("!" + layout[:i])
out["HEADER_LEN"] = kv.HEADER.size
out["CLIENT_DEFAULT_PORT"] = inspect.signature(kv.Client).parameters["port"].default
print(json.dumps(out))
