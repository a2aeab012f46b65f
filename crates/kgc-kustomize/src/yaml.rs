//! The YAML stream `kubectl kustomize` prints (go-yaml v3 through kyaml), byte for byte.
