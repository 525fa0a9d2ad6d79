import { defineConfig } from 'vitest/config'

// Unit tests are pure or run on fakes, in folders that mirror src/. Local tests use this
// machine: real git, the bundle, the npm package, the product files. Integration and
// end-to-end tests share one real local cluster started once by the global setup
// (test/support/global-setup.ts).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['__tests__/unit/**/*.test.ts'],
          // A bound for a hang, not a speed check: CI shares 2 cores with the cluster tests.
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'local',
          include: ['__tests__/local/**/*.test.ts'],
          testTimeout: 120_000,
          // Hooks start servers (the GitHub API loads GitHub's whole REST description).
          hookTimeout: 120_000,
        },
      },
      {
        // Rendering against the real kustomize (built once from its Go module); no cluster.
        test: {
          name: 'render',
          include: ['__tests__/render/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 900_000,
        },
      },
      {
        test: {
          name: 'cluster',
          include: ['__tests__/integration/**/*.test.ts', '__tests__/e2e/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
      {
        // Our workflows under a real Actions runner (act, built once from its Go module), on
        // loopback; the runs that trigger use the same local cluster. scripts/test.sh runs it as a
        // pass of its own.
        test: {
          name: 'act',
          include: ['__tests__/act/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 300_000,
          fileParallelism: false,
        },
      },
    ],
  },
})
