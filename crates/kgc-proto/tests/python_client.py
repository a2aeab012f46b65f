#!/usr/bin/env python3
"""Validates objects with the official Kubernetes Python client's models, as its ApiClient does
when it reads them from a server (`ApiClient.deserialize` ends in the model's `from_dict`).

Usage: python_client.py FILE, FILE holding one JSON object per line. Prints one summary line and
exits 0 when every object validates; prints each failure and exits 1 otherwise. Without the
`kubernetes` package it prints one line saying the check was skipped and exits 0.

Used by tests/typed.rs: whatever kgc_proto::typed::decode accepts must be readable by this client.
"""

import json
import sys

try:
    from kubernetes.client import models
except ImportError as e:
    print("python client check skipped: cannot import kubernetes (%s)" % e)
    sys.exit(0)


def model(api_version, kind):
    """The model class of a kind: `V1Deployment`, or with the package prefix the generator adds
    where names clash (`CoreV1Event`, `EventsV1Event`)."""
    group, _, version = api_version.rpartition("/")
    package = group.split(".")[0] if group else "core"
    version = version[0].upper() + version[1:]
    for name in (package.capitalize() + version + kind, version + kind):
        cls = getattr(models, name, None)
        if cls is not None:
            return cls
    raise SystemExit("no Python model for %s %s" % (api_version, kind))


def main():
    failures = 0
    count = 0
    with open(sys.argv[1]) as f:
        for line in f:
            obj = json.loads(line)
            count += 1
            try:
                model(obj["apiVersion"], obj["kind"]).from_dict(obj)
            except Exception as e:  # noqa: BLE001 - any validation failure is the finding
                failures += 1
                print("REJECTED %s\n  %s\n" % (json.dumps(obj, sort_keys=True), str(e).replace("\n", "\n  ")))
    if failures:
        print("%d of %d objects rejected by the Python client" % (failures, count))
        sys.exit(1)
    print("python client check: %d objects validated" % count)


main()
