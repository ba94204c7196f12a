/**
 * Powertools for AWS Lambda (TypeScript) from its official Lambda layer instead of inside every bundle.
 *
 * Why: logger, metrics and tracer with the X-Ray SDK behind the tracer are ~160 KB minified, more than half of the
 * 300 KB budget of a function bundle, and identical in every function. AWS publishes them as a layer in every
 * commercial region, and Powertools documents this as the way to use it with esbuild: the layer carries
 * `@aws-lambda-powertools/*` (with its ESM tracer patched for the CommonJS X-Ray SDK) and the bundles leave those
 * imports external, as they already do `@aws-sdk/*`, which the Node.js runtime provides.
 *
 * Which layer version: the one Powertools publishes under `/aws/service/powertools/typescript/generic/all/<version>`
 * in SSM, with `<version>` the version installed here, the one the tests ran against. CloudFormation resolves the
 * parameter at deploy time, so the synth stays offline, and the layer cannot drift from `package-lock.json`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ILayerVersion, LayerVersion } from 'aws-cdk-lib/aws-lambda';
import { StringParameter } from 'aws-cdk-lib/aws-ssm';
import type { Construct } from 'constructs';

/** What the bundles leave to the layer. */
export const POWERTOOLS_MODULES = '@aws-lambda-powertools/*';

/** The SSM parameter holding the layer ARN of one Powertools release, as Powertools documents it. */
export function powertoolsLayerParameter(version: string): string {
  return `/aws/service/powertools/typescript/generic/all/${version}`;
}

/**
 * The one Powertools version the app depends on: every `@aws-lambda-powertools/*` dependency of `package.json`, as
 * installed in `node_modules`. They are released together and the layer holds one release, so differing versions
 * fail the synth instead of running code against a layer it was not tested with.
 */
export function installedPowertoolsVersion(repoRoot: string): string {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
  const names = Object.keys(manifest.dependencies ?? {}).filter((n) =>
    n.startsWith('@aws-lambda-powertools/'),
  );
  if (names.length === 0) throw new Error('package.json depends on no @aws-lambda-powertools/* package');
  const versions = new Map<string, string>();
  for (const name of names) {
    const installed = JSON.parse(
      readFileSync(join(repoRoot, 'node_modules', name, 'package.json'), 'utf8'),
    ) as { version: string };
    versions.set(name, installed.version);
  }
  const distinct = new Set(versions.values());
  if (distinct.size !== 1) {
    const list = [...versions].map(([n, v]) => `${n}@${v}`).join(', ');
    throw new Error(`the Powertools layer holds one release, but different versions are installed: ${list}`);
  }
  return [...distinct][0] as string;
}

export interface PowertoolsLayerOptions {
  /** The Powertools release whose layer to use (see `installedPowertoolsVersion`). */
  readonly version: string;
  /**
   * A layer version ARN to use instead of the SSM lookup (a region without the public parameter, or a layer of
   * your own built from the same release).
   * @default - the ARN in the public SSM parameter of `version`
   */
  readonly layerArn?: string;
}

export function powertoolsLayer(
  scope: Construct,
  id: string,
  options: PowertoolsLayerOptions,
): ILayerVersion {
  const arn =
    options.layerArn ??
    StringParameter.valueForStringParameter(scope, powertoolsLayerParameter(options.version));
  return LayerVersion.fromLayerVersionArn(scope, id, arn);
}
