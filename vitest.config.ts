import { defineConfig } from 'vitest/config';

/**
 * The adversarial suite (`test/adversarial/`) is a run of its own, `CRUMBS_SUITE=adversarial vitest run`: its stack
 * allows no private network, the integration stack does (its tests call their own servers on 127.0.0.1), and two
 * stacks cannot share one process's AWS environment. `npm test` runs both, inside a network namespace of their own.
 */
const adversarial = {
  test: {
    name: 'adversarial',
    include: ['test/adversarial/**/*.test.ts'],
    globalSetup: ['test/adversarial/global-setup.ts'],
    testTimeout: 90_000,
    hookTimeout: 90_000,
    pool: 'forks' as const,
  },
};

export default defineConfig({
  test: {
    projects:
      process.env.CRUMBS_SUITE === 'adversarial'
        ? [adversarial]
        : [
            {
              test: {
                name: 'unit',
                include: ['test/unit/**/*.test.ts'],
              },
            },
            {
              test: {
                name: 'integration',
                include: ['test/integration/**/*.test.ts'],
                globalSetup: ['test/integration/global-setup.ts'],
                testTimeout: 60_000,
                hookTimeout: 60_000,
                pool: 'forks',
              },
            },
            {
              test: {
                name: 'e2e',
                include: ['test/e2e/**/*.test.ts'],
                globalSetup: ['test/e2e/global-setup.ts'],
                testTimeout: 180_000,
                hookTimeout: 120_000,
                pool: 'forks',
              },
            },
            {
              test: {
                name: 'infra',
                include: ['test/infra/**/*.test.ts'],
                testTimeout: 180_000,
                hookTimeout: 180_000,
              },
            },
          ],
  },
});
