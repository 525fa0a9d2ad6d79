# The watch mode as a container: `helmrelease-trigger watch` (dist/cli.js, every dependency
# bundled in) on Node 24. Non-root, writes nothing to disk (runs with a read-only root
# filesystem), logs to stdout/stderr, serves /healthz, /readyz and /metrics on :8080.
#   docker build -t helmrelease-trigger .   (after `npm run bundle`; dist/ is committed)
# Pin the base by digest in your own build (node:24-alpine@sha256:…) for reproducible images.
FROM node:24-alpine

ENV NODE_ENV=production
WORKDIR /app
# As cli.mjs: with no package.json beside it, Node would first compile the ESM bundle as
# CommonJS, fail, and compile it again as a module (+20 MiB resident, a slower start).
COPY --chown=0:0 --chmod=0444 dist/cli.js /app/cli.mjs

# A numeric non-root user, so runAsNonRoot can verify it without reading /etc/passwd.
USER 65532:65532
EXPOSE 8080
# A 1 MiB young generation (V8's default grows to 16 MiB per semi-space under a burst of changes
# and keeps it): ~20-30 MiB less resident for a long-running watch; see BENCHMARKS.md, section 4.
ENTRYPOINT ["node", "--max-semi-space-size=1", "/app/cli.mjs"]
CMD ["watch", "--metrics-address=:8080", "--log-format=json"]
