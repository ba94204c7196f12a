/**
 * The front door's TOKEN authorizer. Triggered by API Gateway (REST API) before every route but the public ones,
 * with the request's Authorization header, its answer kept for `AUTHORIZER.ttlSeconds` per header — and locally by
 * the local API server for bearer tokens that are JWTs, where the stack has an issuer. Reads the issuer's discovery
 * document and JWKS (once per container); writes nothing. Allows the stage with the caller's `sub`, workspaces
 * claim and `exp` as context (`shared/core/front-door/authorizer.ts`), or denies it (the front door's 401); fails
 * only when the issuer cannot be read.
 *
 * Small on purpose (its cold start sits in front of a token's first request): Powertools' logger only, no tracer,
 * no metrics, no AWS SDK.
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { injectLambdaContext } from '@aws-lambda-powertools/logger/middleware';
import middy from '@middy/core';
import type { APIGatewayTokenAuthorizerEvent } from 'aws-lambda';
import { allowResponse, denyResponse, tokenCheck } from '#shared/core/front-door/authorizer.ts';
import * as z from '#shared/domain/zod.ts';
import { ENV } from '#shared/topology.ts';

const env = z
  .object({
    [ENV.jwtIssuer]: z.url({ error: 'expected the issuer URL' }),
    [ENV.jwtAudience]: z.pipe(
      z.string(),
      z.transform((text) =>
        text
          .split(',')
          .map((a) => a.trim())
          .filter(Boolean),
      ),
    ),
    [ENV.workspacesClaim]: z._default(z.string().check(z.minLength(1)), 'crumbs:workspaces'),
  })
  .parse(process.env);
const logger = new Logger({ serviceName: 'crumbs-authorizer' });
const check = tokenCheck({
  issuer: env[ENV.jwtIssuer],
  audiences: env[ENV.jwtAudience],
  workspacesClaim: env[ENV.workspacesClaim],
});

export const handler = middy(async (event: APIGatewayTokenAuthorizerEvent) => {
  const verdict = await check(event.authorizationToken);
  if (!verdict.ok) {
    logger.info('token refused', { reason: verdict.reason });
    return denyResponse(event.methodArn);
  }
  return allowResponse(event.methodArn, verdict);
}).use(injectLambdaContext(logger, { resetKeys: true }));
