//! `meta.k8s.io/v1` Table responses (being written).
