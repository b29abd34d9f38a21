# The locklab image: `docker build -t locklab:0.1.0 .` at the repository's
# root, then `docker run --rm locklab:0.1.0 check redlock`. The recipes in
# deploy/ (Kubernetes, Slurm) run this image or the binary it holds.
#
# Stage 1 builds the release binary with the toolchain the project is
# developed on; stage 2 is a slim Debian with the binary alone.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY models models
COPY sim sim
COPY traces traces
COPY replay replay
# The starter lock description `locklab init` writes is compiled in.
COPY examples examples
# So are the Spin peer models `locklab bench --peers` runs.
COPY peers peers
RUN cargo build --release --locked --bin locklab

FROM debian:bookworm-slim
COPY --from=build /src/target/release/locklab /usr/local/bin/locklab
# `locklab replay` needs real servers (redis-server, etcd, ZooKeeper) and a C
# compiler for its clock shim: this image is for check, simulate, merge,
# trace and docs. Runs as an unprivileged user.
RUN useradd --create-home --uid 10001 locklab
USER locklab
WORKDIR /home/locklab
ENTRYPOINT ["locklab"]
CMD ["--help"]
