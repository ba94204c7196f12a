/**
 * The front door's throttles (DESIGN.md "Tenants"): a stage-wide rate and burst on the API Gateway stage, and
 * concurrency reserved for the api function. Per-workspace limits are not here: they hold in the API core, behind
 * any front door (`shared/core/api/request-rate.ts`).
 *
 * - Stage throttle (`crumbs:apiRateLimit`, `crumbs:apiBurstLimit`): every route of the stage together. API Gateway's
 *   own account-wide quota (10,000 requests per second, bursts of 5,000, shared by every API of the account and
 *   region) is the only limit otherwise; this keeps one stage from taking all of it. Over it, API Gateway answers
 *   429 before any function runs (and bills nothing for the function).
 * - Reserved concurrency (`crumbs:apiReservedConcurrency`): executors scale with the queues and draw from the same
 *   account concurrency as the API; a reservation keeps that many for the api function whatever they do (and caps
 *   it there). Lambda refuses any reservation that leaves the account fewer than 100 unreserved executions — on a
 *   new account whose quota is 10, none at all — so nothing is reserved unless the operator sets it;
 *   `crumbs doctor` reads the account's quota and says what fits.
 */
import { CfnStage, type RestApi } from 'aws-cdk-lib/aws-apigateway';
import type { CfnFunction } from 'aws-cdk-lib/aws-lambda';
import type { CrumbsFunction } from './crumbs-function.ts';

export interface StageThrottle {
  /** Requests per second, every route together. */
  readonly rateLimit: number;
  /** Requests at once above the rate. */
  readonly burstLimit: number;
}

/**
 * Sets the stage-wide throttle on the front door's REST API stage: the method setting of every resource and method
 * (`/*` and `*`), which is how a REST stage throttles all its routes (its other method settings are kept).
 */
export function throttleRestStage(api: RestApi, throttle: StageThrottle): void {
  const cfn = api.deploymentStage.node.defaultChild;
  if (!(cfn instanceof CfnStage)) throw new Error('the front door has no CloudFormation stage');
  const settings = (cfn.methodSettings ?? []) as CfnStage.MethodSettingProperty[];
  const all = settings.find((m) => m.resourcePath === '/*' && m.httpMethod === '*');
  const rest = settings.filter((m) => m !== all);
  cfn.methodSettings = [
    ...rest,
    {
      ...all,
      resourcePath: '/*',
      httpMethod: '*',
      throttlingRateLimit: throttle.rateLimit,
      throttlingBurstLimit: throttle.burstLimit,
    },
  ];
}

/** Reserves `executions` of the account's concurrency for `fn` (none when undefined). */
export function reserveConcurrency(fn: CrumbsFunction, executions: number | undefined): void {
  if (executions === undefined || executions <= 0) return;
  (fn.function.node.defaultChild as CfnFunction).reservedConcurrentExecutions = executions;
}
