# syntax=docker/dockerfile:1
#
# scion container image.
#   docker build -t scion:0.1.0 .
# The runtime image has no shell and no package manager; it runs as the
# distroless "nonroot" user (65532), matching the Deployment's runAsUser.

FROM rust:1.95-bookworm AS builder
WORKDIR /src
# The whole crate (filtered by .dockerignore): Cargo checks every target named
# in Cargo.toml ([lib], [[bin]], [[bench]], [[example]], tests) even when
# building one binary, so copying src/ alone would fail.
COPY . .
# target/ and the registry live in cache mounts, so the binary is copied out
# in the same step.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --bin scion \
    && install -D -m 0555 target/release/scion /out/scion

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /out/scion /scion
USER 65532:65532
# webhook (HTTPS), metrics, health
EXPOSE 10250 8080 8081
ENTRYPOINT ["/scion"]
CMD ["serve"]
