/**
 * Checks a SigV4-signed request the way AWS does, for the local events server: the credential names the local
 * stack's access key and service `appsync`, the date is within 15 minutes, and the signature recomputed with the
 * local secret over the headers the request says it signed and its body matches.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { NodeSha256 } from '#shared/adapters/events/appsync-publisher.ts';

const AUTH =
  /^AWS4-HMAC-SHA256 Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;-]+),\s*Signature=([0-9a-f]{64})$/;
const SKEW_MS = 15 * 60 * 1000;

/** Why the request is not signed by `credentials`, or undefined when it is. */
export async function sigv4Problem(
  request: { method: string; path: string; headers: Record<string, string>; body: string },
  credentials: { accessKeyId: string; secretAccessKey: string },
  now = Date.now(),
): Promise<string | undefined> {
  const match = AUTH.exec(request.headers.authorization ?? '');
  if (!match) return 'the request is not signed with AWS Signature Version 4';
  const [, accessKeyId, , region, service, signedHeaders, signature] = match as unknown as string[];
  if (accessKeyId !== credentials.accessKeyId) return 'the access key is not one this stack accepts';
  if (service !== 'appsync') return `signed for service ${service}, not appsync`;
  const amzDate = request.headers['x-amz-date'] ?? '';
  const dated = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!dated) return 'x-amz-date is missing or malformed';
  const signingDate = new Date(`${dated[1]}-${dated[2]}-${dated[3]}T${dated[4]}:${dated[5]}:${dated[6]}Z`);
  if (Math.abs(now - signingDate.getTime()) > SKEW_MS) return 'the signature has expired (x-amz-date)';
  const headers: Record<string, string> = {};
  for (const name of (signedHeaders ?? '').split(';')) {
    const value = request.headers[name];
    if (value === undefined) return `the signed header ${name} is missing`;
    headers[name] = value;
  }
  // The signer takes a given payload hash as it is: the body must be the one it names.
  const payloadHash = headers['x-amz-content-sha256'];
  if (payloadHash !== undefined && payloadHash !== createHash('sha256').update(request.body).digest('hex')) {
    return 'the body does not match x-amz-content-sha256';
  }
  const url = new URL(`http://${headers.host ?? 'localhost'}${request.path}`);
  const signer = new SignatureV4({
    service: 'appsync',
    region: region ?? '',
    credentials: { accessKeyId: credentials.accessKeyId, secretAccessKey: credentials.secretAccessKey },
    sha256: NodeSha256,
  });
  const signed = await signer.sign(
    {
      method: request.method,
      protocol: 'http:',
      hostname: url.hostname,
      path: url.pathname,
      query: {},
      headers,
      body: request.body,
    },
    { signingDate },
  );
  const expected = /Signature=([0-9a-f]{64})/.exec(String(signed.headers.authorization ?? ''))?.[1] ?? '';
  const given = Buffer.from(signature ?? '');
  return expected.length === given.length && timingSafeEqual(Buffer.from(expected), given)
    ? undefined
    : 'the signature does not match';
}
