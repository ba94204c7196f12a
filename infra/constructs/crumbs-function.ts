/**
 * The one function construct of crumbs: every Lambda is built here, so runtime, architecture, bundling, tracing,
 * logging and alarms cannot differ between functions. Grants are made only through `bind*` helpers, each of which
 * sets the environment variable the handler reads (names from `ENV` in the topology) AND the least-privilege grant
 * for it, so a function can never have a permission without knowing the resource, or the reverse.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ArnFormat, Duration, Stack } from 'aws-cdk-lib';
import { Alarm, ComparisonOperator, TreatMissingData } from 'aws-cdk-lib/aws-cloudwatch';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { type IRole, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, type ILayerVersion, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { type BundlingOptions, NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, RetentionDays } from 'aws-cdk-lib/aws-logs';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { NagSuppressions } from 'cdk-nag';
import { Construct } from 'constructs';
import {
  AGENT_SECRET_PREFIX_ENV,
  DEFAULT_AGENT_SECRET_PREFIX,
} from '#shared/adapters/secrets/secret-source.ts';
import {
  type BundlingDeclaration,
  ENV,
  type ExecutorRunner,
  type FunctionDeclaration,
} from '#shared/topology.ts';
import { POWERTOOLS_MODULES } from './powertools-layer.ts';

/** Repository root: topology entries are relative to it, and so are `package-lock.json` and `tsconfig.json`. */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Environment variable with the Secrets Manager name prefix of LLM provider keys (read by
 * `shared/adapters/llm/api-keys.ts`). Not yet in `ENV` of the topology, so named here once.
 */
export const SECRET_PREFIX_ENV = 'CRUMBS_SECRET_PREFIX';

/**
 * Environment variable that switches embeddings from the local hashed embedder to Titan v2 on Bedrock
 * (`shared/adapters/embeddings/embedder-from-env.ts`). Not yet in `ENV` of the topology, so named here once.
 */
export const EMBEDDINGS_ENV = 'CRUMBS_EMBEDDINGS';

/** Same namespace as `functions/wiring/powertools.ts` gives Powertools Metrics. */
export const METRICS_NAMESPACE = 'crumbs';

/**
 * ESM shim: bundled CommonJS dependencies (X-Ray SDK, parts of the AWS SDK) call `require` for Node built-ins,
 * which does not exist in an ES module. esbuild's `__require` falls back to a global `require` when there is one.
 */
export const ESM_REQUIRE_BANNER =
  "import{createRequire as __crumbsCreateRequire}from'node:module';const require=__crumbsCreateRequire(import.meta.url);";

/**
 * Bundling of every crumbs function; `bench/bundles.bench.ts` bundles with exactly these options.
 *
 * What is bundled: measured with `npm run bench:bundles -- --runs 9` (esbuild 0.28, minified ESM, Node 20, 2 vCPU,
 * median of 9 fresh-process imports; "+srcmap" = with `--enable-source-maps`, as deployed), 2026-11-22:
 *
 *                             everything bundled      @aws-sdk/* external     + Powertools from its layer
 *   function                   KB   load  +srcmap      KB   load  +srcmap      KB   load  +srcmap
 *   api                       658     72       87     270    125      149     115    163      161
 *   publisher                 672     74       86     268    133      138     112    176      174
 *   rule-manager              732     84       98     374    128      135     219    161      162
 *   executor-agent            760     77       96     358    151      147     202    166      186
 *   executor-tool             854     91      107     451    135      145     296    183      186
 *   executor-workflow         824     85      103     435    135      138     280    157      158
 *   executor-context-builder  694     71       86     305    118      126     150    148      151
 *   dlq-handler               612     64       77     275    105      111     120    131      151
 *
 * Choice: the AWS SDK external (the Node.js 22 runtime provides it) and Powertools from its official layer
 * (`powertools-layer.ts`; `bundlingOptions(true)`), the last column. The SDK alone is ~390 KB and Powertools with
 * the X-Ray SDK ~155 KB per function, so with either bundled no function meets the 300 KB budget. The numbers show
 * the price: the load times include the external modules, read here from node_modules, and many small files load
 * slower than one bundle (~60-90 ms more than everything bundled); on Lambda the runtime's SDK and the layer are read
 * from local disk the same way. What shrank the application code itself (zod/mini, no AI SDK, own calculator,
 * template and JSONPath, one interpretive JSON Schema validator) cut both size and load time. Re-run the bench when
 * dependencies change; `test/infra/bundles.test.ts` fails as soon as a bundle passes the budget.
 */
export const CRUMBS_BUNDLING: Readonly<
  Required<
    Pick<
      BundlingOptions,
      'format' | 'minify' | 'sourceMap' | 'target' | 'mainFields' | 'banner' | 'externalModules'
    >
  >
> = {
  format: OutputFormat.ESM,
  minify: true,
  sourceMap: true,
  target: 'node22',
  mainFields: ['module', 'main'],
  banner: ESM_REQUIRE_BANNER,
  externalModules: ['@aws-sdk/*'],
};

/** `CRUMBS_BUNDLING`, with Powertools left external when the function runs with the Powertools layer. */
export function bundlingOptions(powertoolsFromLayer: boolean): BundlingOptions {
  return {
    ...CRUMBS_BUNDLING,
    externalModules: powertoolsFromLayer
      ? [...CRUMBS_BUNDLING.externalModules, POWERTOOLS_MODULES]
      : [...CRUMBS_BUNDLING.externalModules],
  };
}

/** What a function is, as the topology declares it (`dlqHandler` has no trigger of its own, hence the Pick). */
export type CrumbsFunctionDeclaration = Pick<
  FunctionDeclaration,
  'name' | 'entry' | 'timeoutSeconds' | 'memoryMb' | 'uses' | 'bundling'
>;

/**
 * `bundlingOptions`, plus what the declaration says its bundle leaves out (`bundling` in the topology): modules
 * kept external, packages installed beside the bundle (NodejsFunction installs them from the lock file), and
 * files copied next to it (a worker script). The bundle test and benchmark bundle with these same options.
 */
export function bundlingOptionsFor(
  extra: BundlingDeclaration | undefined,
  powertoolsFromLayer: boolean,
): BundlingOptions {
  const base = bundlingOptions(powertoolsFromLayer);
  if (extra === undefined) return base;
  const copies = extra.copyFiles ?? [];
  return {
    ...base,
    externalModules: [...(base.externalModules ?? []), ...(extra.externalModules ?? [])],
    ...(extra.nodeModules !== undefined ? { nodeModules: [...extra.nodeModules] } : {}),
    ...(copies.length > 0
      ? {
          commandHooks: {
            beforeBundling: () => [],
            beforeInstall: () => [],
            afterBundling: (inputDir: string, outputDir: string) =>
              copies.map((file) => `cp "${inputDir}/${file}" "${outputDir}/"`),
          },
        }
      : {}),
  };
}

export interface CrumbsFunctionProps {
  /** The function's declaration in `shared/topology.ts`: entry, timeout and memory come from here. */
  readonly declaration: CrumbsFunctionDeclaration;
  /** Deployment stage, part of the function name (`crumbs-<stage>-<name>`). */
  readonly stage: string;
  /**
   * Absolute path of the handler module.
   * @default - the declaration's `entry`, resolved against the repository root
   */
  readonly entry?: string;
  /**
   * How long function logs are kept.
   * @default RetentionDays.ONE_MONTH
   */
  readonly logRetention?: RetentionDays;
  /**
   * Extra environment variables; resource-related variables are set by the `bind*` helpers instead.
   * @default - none
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * The Powertools layer (`powertools-layer.ts`). Given, the function runs with it and its bundle leaves
   * `@aws-lambda-powertools/*` to it; absent, Powertools is bundled (LocalStack, which has no public layers).
   * @default - Powertools bundled into the function
   */
  readonly powertoolsLayer?: ILayerVersion;
}

export type TableAccess = 'read' | 'read-write';

/** The EventBridge rule management actions the rule manager uses, and nothing else (all scoped to its prefix). */
export const RULE_MANAGEMENT_ACTIONS = [
  'events:PutRule',
  'events:DeleteRule',
  'events:DescribeRule',
  'events:PutTargets',
  'events:RemoveTargets',
  'events:ListTargetsByRule',
  'events:EnableRule',
  'events:DisableRule',
] as const;

/** ARN of every rule on `bus` whose name starts with `prefix`: what the rule manager may manage. */
export function ruleArnPattern(scope: Construct, bus: IEventBus, prefix: string): string {
  return Stack.of(scope).formatArn({
    service: 'events',
    resource: 'rule',
    resourceName: `${bus.eventBusName}/${prefix}*`,
    arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
  });
}

/** `prefix` as a literal inside a cdk-nag `appliesTo` regex (resolved templates spell ARNs in several forms). */
function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

export class CrumbsFunction extends Construct {
  public readonly function: NodejsFunction;
  public readonly role: IRole;
  public readonly logGroup: LogGroup;
  public readonly errorsAlarm: Alarm;
  public readonly throttlesAlarm: Alarm;
  public readonly declaration: CrumbsFunctionDeclaration;

  constructor(scope: Construct, id: string, props: CrumbsFunctionProps) {
    super(scope, id);
    const { declaration, stage } = props;
    this.declaration = declaration;
    const functionName = `crumbs-${stage}-${declaration.name}`;
    const entry = props.entry ?? join(REPO_ROOT, declaration.entry);
    if (!existsSync(entry)) {
      throw new Error(
        `crumbs function ${declaration.name}: handler ${declaration.entry} does not exist (${entry})`,
      );
    }

    this.logGroup = new LogGroup(this, 'Logs', {
      logGroupName: `/aws/lambda/${functionName}`,
      retention: props.logRetention ?? RetentionDays.ONE_MONTH,
    });

    // An own role instead of the AWSLambdaBasicExecutionRole managed policy: logs only to this function's group.
    const role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `crumbs ${declaration.name} (${stage})`,
    });
    this.logGroup.grantWrite(role);
    this.role = role;

    this.function = new NodejsFunction(this, 'Function', {
      functionName,
      entry,
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      runtime: Runtime.NODEJS_22_X,
      architecture: Architecture.ARM_64,
      timeout: Duration.seconds(declaration.timeoutSeconds),
      memorySize: declaration.memoryMb,
      tracing: Tracing.ACTIVE,
      logGroup: this.logGroup,
      role,
      bundling: bundlingOptionsFor(declaration.bundling, props.powertoolsLayer !== undefined),
      ...(props.powertoolsLayer ? { layers: [props.powertoolsLayer] } : {}),
      environment: {
        POWERTOOLS_SERVICE_NAME: `crumbs-${declaration.name}`,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        // Stack traces point into the TypeScript sources through the bundle's source map.
        NODE_OPTIONS: '--enable-source-maps',
        ...props.environment,
      },
    });

    this.errorsAlarm = new Alarm(this, 'ErrorsAlarm', {
      alarmName: `${functionName}-errors`,
      alarmDescription: `${functionName} returned errors (unhandled exceptions or timeouts)`,
      metric: this.function.metricErrors({ period: Duration.minutes(1) }),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });
    this.throttlesAlarm = new Alarm(this, 'ThrottlesAlarm', {
      alarmName: `${functionName}-throttles`,
      alarmDescription: `${functionName} was throttled (account or reserved concurrency exhausted)`,
      metric: this.function.metricThrottles({ period: Duration.minutes(1) }),
      threshold: 0,
      comparisonOperator: ComparisonOperator.GREATER_THAN_THRESHOLD,
      evaluationPeriods: 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
    });

    NagSuppressions.addResourceSuppressions(
      this.function,
      [
        {
          id: 'AwsSolutions-L1',
          reason:
            'crumbs pins Node.js 22 (an LTS runtime supported by Lambda) on purpose: bundles target node22 and ' +
            'the code is tested on it; moving to a newer runtime is a deliberate change, not an automatic one.',
        },
      ],
      true,
    );
    NagSuppressions.addResourceSuppressions(
      role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'xray:PutTraceSegments and xray:PutTelemetryRecords (active tracing) support no resource-level ' +
            'permissions, so AWS requires Resource "*" for them.',
          appliesTo: ['Resource::*'],
        },
      ],
      true,
    );
  }

  /** Adds one environment variable; resource variables go through the `bind*` helpers. */
  addEnvironment(name: string, value: string): this {
    this.function.addEnvironment(name, value);
    return this;
  }

  /** `CRUMBS_TABLE_NAME` and item-level access to the table and its indexes. */
  bindTable(table: ITable, access: TableAccess): this {
    this.function.addEnvironment(ENV.tableName, table.tableName);
    if (access === 'read') table.grantReadData(this.function);
    else table.grantReadWriteData(this.function);
    this.suppressIndexWildcard();
    return this;
  }

  /**
   * Read access to the table's stream only (the event source mapping polls it). Not `grantStreamRead`: that also
   * grants `dynamodb:ListStreams` on `*`, which Lambda does not need when it is given the stream ARN.
   */
  bindTableStream(table: ITable): this {
    table.grantStream(
      this.function,
      'dynamodb:DescribeStream',
      'dynamodb:GetRecords',
      'dynamodb:GetShardIterator',
    );
    return this;
  }

  /** `CRUMBS_EVENT_BUS_NAME` and `events:PutEvents` on that bus only. */
  bindBus(bus: IEventBus, access: 'put-events'): this {
    this.function.addEnvironment(ENV.busName, bus.eventBusName);
    if (access === 'put-events') bus.grantPutEventsTo(this.function);
    return this;
  }

  /**
   * What the rule manager needs: `CRUMBS_EVENT_BUS_NAME`, `CRUMBS_RULE_NAME_PREFIX`, `CRUMBS_EXECUTOR_QUEUE_ARNS`,
   * management of rules named `<prefix>*` on the crumbs bus and nothing else, and `events:ListRules` (the one
   * EventBridge action without resource-level permissions; it lists names, it changes nothing).
   *
   * The rule manager cannot point rules anywhere but the crumbs executor queues: it has no `iam:PassRole`, so
   * only targets with a resource policy can receive events, and the only queues whose policy admits EventBridge
   * for rules under this prefix are the executor queues (see `allowRuleDelivery` in `work-queue.ts`).
   */
  bindRuleManagement(bus: IEventBus, prefix: string, queues: Readonly<Record<ExecutorRunner, IQueue>>): this {
    this.function.addEnvironment(ENV.busName, bus.eventBusName);
    this.function.addEnvironment(ENV.ruleNamePrefix, prefix);
    const arns: Record<string, string> = {};
    for (const [kind, queue] of Object.entries(queues)) arns[kind] = queue.queueArn;
    this.function.addEnvironment(ENV.executorQueueArns, Stack.of(this).toJsonString(arns));
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'ManageOwnRules',
        actions: [...RULE_MANAGEMENT_ACTIONS],
        resources: [ruleArnPattern(this, bus, prefix)],
      }),
    );
    this.function.addToRolePolicy(
      new PolicyStatement({ sid: 'ListRules', actions: ['events:ListRules'], resources: ['*'] }),
    );
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Rule management is scoped to rule/<crumbs bus>/<rule name prefix>*: the rule manager creates one rule ' +
            'per definition, named with that prefix, and may touch no other rule. events:ListRules supports no ' +
            'resource-level permissions, so it is granted on "*" (it reads rule names, it changes nothing).',
          appliesTo: [
            { regex: `/^Resource::arn:.+:events:.*:rule\\/.+\\/${escapeRegex(prefix)}\\*$/g` },
            'Resource::*',
          ],
        },
      ],
      true,
    );
    return this;
  }

  /**
   * `CRUMBS_SECRET_PREFIX` and `secretsmanager:GetSecretValue` on secrets named `<prefix>*` only (LLM provider
   * keys, read by name at run time).
   */
  bindSecrets(prefix: string): this {
    this.function.addEnvironment(SECRET_PREFIX_ENV, prefix);
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'ReadLlmProviderKeys',
        actions: ['secretsmanager:GetSecretValue', 'secretsmanager:DescribeSecret'],
        // Secrets Manager appends `-XXXXXX` to secret ARNs, so a prefix grant must end in `*`.
        resources: [
          Stack.of(this).formatArn({
            service: 'secretsmanager',
            resource: 'secret',
            resourceName: `${prefix}*`,
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        ],
      }),
    );
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'LLM provider keys are secrets named <secret prefix><provider>, chosen by definitions at run time; ' +
            'the grant covers that name prefix only (the trailing * also matches the random ARN suffix).',
          appliesTo: [{ regex: `/^Resource::arn:.+:secretsmanager:.*:secret:${escapeRegex(prefix)}\\*$/g` }],
        },
      ],
      true,
    );
    return this;
  }

  /**
   * `CRUMBS_SECRET_SOURCE=secretsmanager` and `secretsmanager:GetSecretValue` on secrets named
   * `crumbs/agents/*` only: the credentials agent and MCP tool definitions reference by `secret_ref`
   * (`shared/adapters/secrets/secret-source.ts`), read by name at run time.
   */
  bindAgentSecrets(prefix = DEFAULT_AGENT_SECRET_PREFIX): this {
    this.function.addEnvironment(ENV.secretSource, 'secretsmanager');
    this.function.addEnvironment(AGENT_SECRET_PREFIX_ENV, prefix);
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'ReadAgentCredentials',
        actions: ['secretsmanager:GetSecretValue'],
        resources: [
          Stack.of(this).formatArn({
            service: 'secretsmanager',
            resource: 'secret',
            resourceName: `${prefix}*`,
            arnFormat: ArnFormat.COLON_RESOURCE_NAME,
          }),
        ],
      }),
    );
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Agent credentials are secrets named <agent secret prefix><secret_ref>, chosen by definitions at run ' +
            'time; the grant covers that name prefix only (the trailing * also matches the random ARN suffix).',
          appliesTo: [{ regex: `/^Resource::arn:.+:secretsmanager:.*:secret:${escapeRegex(prefix)}\\*$/g` }],
        },
      ],
      true,
    );
    return this;
  }

  /**
   * `CRUMBS_EMBEDDINGS=bedrock` and `bedrock:InvokeModel` on that one embedding model: every function that indexes
   * or searches vectors must use the same model, so they all get this binding or none does.
   */
  bindEmbeddings(modelId: string): this {
    this.function.addEnvironment(EMBEDDINGS_ENV, 'bedrock');
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'InvokeEmbeddingModel',
        actions: ['bedrock:InvokeModel'],
        resources: [
          Stack.of(this).formatArn({
            service: 'bedrock',
            account: '',
            resource: 'foundation-model',
            resourceName: modelId,
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
        ],
      }),
    );
    return this;
  }

  /**
   * Invoke (and stream) Bedrock models for `bedrock/<modelId>` LLM calls. Which model is up to each definition
   * at run time, so the grant covers foundation models (in any region: cross-region inference profiles route to
   * other regions) and this account's inference profiles; other providers go through `bindSecrets`.
   */
  bindLlmModels(): this {
    const stack = Stack.of(this);
    this.function.addToRolePolicy(
      new PolicyStatement({
        sid: 'InvokeLlmModels',
        actions: ['bedrock:InvokeModel', 'bedrock:InvokeModelWithResponseStream'],
        resources: [
          stack.formatArn({
            service: 'bedrock',
            region: '*',
            account: '',
            resource: 'foundation-model',
            resourceName: '*',
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
          stack.formatArn({
            service: 'bedrock',
            resource: 'inference-profile',
            resourceName: '*',
            arnFormat: ArnFormat.SLASH_RESOURCE_NAME,
          }),
        ],
      }),
    );
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Agent and tool definitions choose their Bedrock model at run time (bedrock/<modelId>), so invoking is ' +
            "granted on foundation models and this account's inference profiles, and on no other Bedrock action.",
          appliesTo: [
            { regex: '/^Resource::arn:.+:bedrock:\\*::foundation-model\\/\\*$/g' },
            { regex: '/^Resource::arn:.+:bedrock:.*:inference-profile\\/\\*$/g' },
          ],
        },
      ],
      true,
    );
    return this;
  }

  private suppressIndexWildcard(): void {
    NagSuppressions.addResourceSuppressions(
      this.role,
      [
        {
          id: 'AwsSolutions-IAM5',
          reason:
            'Queries go through the breadcrumbs table global secondary indexes (by schema, by tag); the grant is ' +
            '<table ARN>/index/* of the crumbs table only, not of any other table.',
          appliesTo: [{ regex: '/^Resource::.*\\/index\\/\\*$/g' }],
        },
      ],
      true,
    );
  }
}
