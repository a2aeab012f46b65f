# syntax=docker/dockerfile:1
# The image deploy/*.yaml names: the `kgc` binary alone, for `kgc controller` and `kgc sync` in
# a cluster. Build and push it as REGISTRY/kgc:TAG (README, "Running in a cluster"):
#
#   docker build -t REGISTRY/kgc:TAG .
#   docker build --target kgc-ssh -t REGISTRY/kgc:TAG-ssh .   # kgc sync from ssh:// sources
#
# Two stages: a Rust builder, then a runtime image with nothing but the binary and the C
# runtime it links (libc, libm, libgcc_s: rusqlite builds SQLite in, TLS is rustls, git is gix,
# protobuf is compiled by protox), running as a non-root user with no shell.

# The builder is Debian 12 (bookworm) like both runtime images, so the binary needs no newer
# glibc than they have.
ARG RUST_VERSION=1.95

FROM docker.io/library/rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
# --locked: exactly the dependency versions of Cargo.lock. The cache mounts keep the registry
# and the target directory between builds of the same machine; the binary is copied out of the
# cache so the next stage can see it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p kgc \
    && install -D -m 0755 target/release/kgc /out/kgc

# kgc sync with ssh:// sources: gix runs the `ssh` program for them, which the default image
# below does not have. This variant is Debian slim with openssh-client and a non-root user of
# the same uid (65532); it is larger (~80 MB against ~25 MB) and has a shell, so use it only
# for ssh:// (https:// with a token and file:// need neither). Mount the key and known_hosts
# read-only, as kgc sync's ssh credential options describe.
FROM docker.io/library/debian:bookworm-slim AS kgc-ssh
RUN apt-get update \
    && apt-get install -y --no-install-recommends openssh-client ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 65532 nonroot \
    && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /home/nonroot --shell /usr/sbin/nologin nonroot
COPY --from=build /out/kgc /usr/local/bin/kgc
USER 65532:65532
LABEL org.opencontainers.image.title="kgc" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["kgc"]

# The default image (last stage): distroless cc, glibc and libgcc with CA certificates, no
# shell and no package manager, uid 65532 (`nonroot`), as deploy/*.yaml's runAsUser expects.
FROM gcr.io/distroless/cc-debian12:nonroot AS kgc
COPY --from=build /out/kgc /usr/local/bin/kgc
USER 65532:65532
LABEL org.opencontainers.image.title="kgc" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["kgc"]
