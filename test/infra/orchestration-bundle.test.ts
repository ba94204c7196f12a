/**
 * The agent kind loads its orchestration module (the workflow engine) with a deferred `import()`, so functions
 * that rarely orchestrate do not initialise it at cold start. Bundled as executor-agent-mcp ships (one esbuild file,
 * the MCP SDK loaded first), the deferred module still initialises and runs an orchestration.
 */
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleFunction } from '#infra/bundling.ts';
import { bundlingOptionsFor, REPO_ROOT } from '#infra/constructs/bundling-options.ts';
import { topology } from '#shared/topology.ts';

const outRoot = join(REPO_ROOT, '.scratch', 'test-orchestration-bundle');
afterAll(() => rmSync(outRoot, { recursive: true, force: true }));

describe('the orchestration module in a bundled agent function', () => {
  it('loads on first use and starts a run that asks the sub-agent', async () => {
    const bundle = await bundleFunction(
      'test/support/orchestration-bundle-entry.ts',
      join(outRoot, 'index.mjs'),
      bundlingOptionsFor(topology.functions.executors['agent-mcp'].bundling),
    );
    const { stdout } = await promisify(execFile)(process.execPath, [bundle.outfile], { encoding: 'utf8' });
    expect(JSON.parse(stdout)).toEqual({
      run: { status: 'running', workflow: 'agent:lead' },
      outputs: [['agent.request.v1', 'go']],
    });
  });
});
