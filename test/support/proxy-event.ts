/**
 * A REST API proxy event (payload format 1.0) as API Gateway sends it to an integration, for tests that call a
 * Lambda handler or `toHttpRequest` directly: headers as given (lower-cased, single and multi-value), the query,
 * the body, and the authorizer's context in `requestContext.authorizer` when there is one (every value a string,
 * as API Gateway turns them, with its own `principalId` and `integrationLatency`).
 */
import type { HttpEvent } from '#shared/core/api/http.ts';

export function proxyEvent(options: {
  method: string;
  path: string;
  headers?: Record<string, string>;
  query?: Record<string, string>;
  body?: string;
  authorizer?: Record<string, string | number | boolean> & { principalId?: string };
  sourceIp?: string;
}): HttpEvent {
  const headers = Object.fromEntries(
    Object.entries(options.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
  );
  const query = options.query ?? {};
  const hasQuery = Object.keys(query).length > 0;
  const authorizer =
    options.authorizer === undefined
      ? undefined
      : {
          ...Object.fromEntries(Object.entries(options.authorizer).map(([k, v]) => [k, String(v)])),
          principalId: String(options.authorizer.principalId ?? options.authorizer.sub ?? ''),
          integrationLatency: 0,
        };
  return {
    resource: '/{proxy+}',
    path: options.path,
    httpMethod: options.method,
    headers,
    multiValueHeaders: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]])),
    queryStringParameters: hasQuery ? query : null,
    multiValueQueryStringParameters: hasQuery
      ? Object.fromEntries(Object.entries(query).map(([k, v]) => [k, [v]]))
      : null,
    pathParameters: { proxy: options.path.slice(1) },
    stageVariables: null,
    requestContext: {
      accountId: '123456789012',
      apiId: 'abc123',
      authorizer,
      protocol: 'HTTP/1.1',
      httpMethod: options.method,
      identity: {
        accessKey: null,
        accountId: null,
        apiKey: null,
        apiKeyId: null,
        caller: null,
        clientCert: null,
        cognitoAuthenticationProvider: null,
        cognitoAuthenticationType: null,
        cognitoIdentityId: null,
        cognitoIdentityPoolId: null,
        principalOrgId: null,
        sourceIp: options.sourceIp ?? '203.0.113.7',
        user: null,
        userAgent: headers['user-agent'] ?? null,
        userArn: null,
      },
      path: `/prod${options.path}`,
      stage: 'prod',
      requestId: 'test-request',
      requestTimeEpoch: Date.now(),
      resourceId: 'abc',
      resourcePath: '/{proxy+}',
    },
    body: options.body ?? null,
    isBase64Encoded: false,
  };
}
