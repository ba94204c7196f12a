/**
 * The dashboard: built from `ui/` at synth time, bundled beside a small function of its own so the API function
 * carries none of it, and served on the API's own origin (no CORS, one URL) at the ui function's public routes of
 * the front door (`front-door.ts`). Public, like any login page: every data call it makes goes to the
 * authorizer-protected routes with the user's token.
 */
import { join } from 'node:path';
import { ENV, topology } from '#shared/topology.ts';
import { buildDashboard } from '../../ui/build.ts';
import { REPO_ROOT } from './bundling-options.ts';
import type { CrumbsFunction } from './crumbs-function.ts';
import type { TopologyFunctions } from './topology-functions.ts';

/** The ui function, with the built dashboard beside its bundle. */
export function dashboardFunction(functions: TopologyFunctions): CrumbsFunction {
  const fn = functions.create(topology.functions.ui, {
    extraFiles: {
      from: buildDashboard(join(REPO_ROOT, 'node_modules', '.cache', 'crumbs-ui')),
      name: 'ui',
    },
  });
  fn.addEnvironment(ENV.uiDir, '/var/task/ui');
  return fn;
}
