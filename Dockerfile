# convertd in a container: Debian bookworm slim, the engines from Debian, Node 24 from npm (as
# the project's own `node` dependency), a non-root user, and tini as PID 1 (it reaps zombies:
# soffice and gs leave children behind, and PID 1 must collect them).
#
#   docker build -t convertd .
#   docker run -p 8080:8080 -v convertd-data:/data convertd
#
# Bubblewrap needs unprivileged user namespaces inside the container; where the runtime forbids
# them (Docker's default seccomp profile does), either run with
# `--security-opt seccomp=unconfined --security-opt apparmor=unconfined`, or set
# CONVERTD_SANDBOX=off and rely on the container as the sandbox (one container per trust domain).
FROM debian:bookworm-slim

ENV DEBIAN_FRONTEND=noninteractive
# Only what bootstraps the build: the engines' packages come from the project's own list below.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tini nodejs npm \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY package.json package-lock.json ./
# Node 24 arrives as the `node` package in node_modules/.bin (Debian's nodejs only runs npm).
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY src ./src
COPY scripts/packages.ts ./scripts/
# The Debian packages of the process layer and of every engine in src/engines/index.ts, as
# scripts/packages.ts prints them: the same list `npm start` installs (test/engine-modules.test.ts).
RUN node_modules/.bin/node scripts/packages.ts > /tmp/packages.txt \
 && apt-get update \
 && xargs --arg-file=/tmp/packages.txt apt-get install -y --no-install-recommends \
 && rm -rf /var/lib/apt/lists/* /tmp/packages.txt

RUN useradd --system --home-dir /data --create-home convertd
USER convertd
ENV HOST=0.0.0.0 PORT=8080 CONVERTD_DATA_DIR=/data PATH=/app/node_modules/.bin:$PATH
VOLUME /data
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s CMD node -e "fetch('http://127.0.0.1:8080/healthz').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "--expose-gc", "--heap-growing-percent=100", "src/cli/main.ts", "serve"]
