/**
 * Stands in for `ajv` and `ajv-formats` in the executor-agent-mcp bundle (an esbuild alias, `bundling.alias` in
 * the topology). The MCP SDK's client imports Ajv statically for its default JSON Schema validator, but
 * `mcp-client.ts` always hands it `CfWorkerJsonSchemaValidator` (@cfworker/json-schema, which every function
 * already carries), so Ajv with ajv-formats and fast-uri (133 KB minified) would be loaded at every cold start and
 * never run. `npm run bench:bundles -- --runs 5`: the function's load CPU time went from 1.71× the api function's
 * to 1.52× without it. Should the SDK ever construct Ajv after all, this fails loudly instead of validating
 * nothing (`test/infra/mcp-bundle.test.ts` runs the bundled client). Tests and the local stack run the sources,
 * where the real Ajv is imported (and still not used).
 */
export default function unusedAjv(): never {
  throw new Error(
    'Ajv is not bundled into executor-agent-mcp: give the MCP client a jsonSchemaValidator (mcp-client.ts does)',
  );
}
