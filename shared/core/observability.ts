/**
 * One Powertools logger, tracer and metrics per function (created once per cold start). Structured logs carry
 * breadcrumb id, definition id and thread as keys where a handler knows them.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { Tracer } from '@aws-lambda-powertools/tracer';

export function observability(serviceName: string): { logger: Logger; tracer: Tracer; metrics: Metrics } {
  return {
    logger: new Logger({ serviceName }),
    tracer: new Tracer({ serviceName }),
    metrics: new Metrics({ serviceName, namespace: 'crumbs' }),
  };
}
