/**
 * A JWT issuer on loopback for tests: OIDC discovery (`/.well-known/openid-configuration`) and a JWKS of RSA keys
 * generated here, and tokens signed with them in the two shapes a Cognito user pool issues — ID tokens (`aud` is
 * the app client, `token_use: id`) and access tokens (`client_id`, no `aud`, `token_use: access`) — or any claims.
 * `rotate()` adds a new signing key (the JWKS then lists both), as an issuer rotating keys does.
 */
import { createSign, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createServer, type Server } from 'node:http';

export interface TestIssuer {
  readonly issuer: string;
  /** Requests the issuer has answered, by path. */
  readonly requests: string[];
  /** An RS256 JWT with these claims over the defaults (`iss`, `sub`, `iat`, `exp` in 5 minutes). */
  sign(claims: Record<string, unknown>, options?: { kid?: string; key?: KeyObject; alg?: string }): string;
  idToken(clientId: string, claims?: Record<string, unknown>): string;
  accessToken(clientId: string, claims?: Record<string, unknown>): string;
  /** Signs with a new key from now on; the JWKS lists it too. */
  rotate(): void;
  stop(): Promise<void>;
}

interface SigningKey {
  kid: string;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

function newKey(n: number): SigningKey {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { kid: `key-${n}`, privateKey, publicKey };
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

export async function startTestIssuer(options: { discoveryIssuer?: string } = {}): Promise<TestIssuer> {
  const keys: SigningKey[] = [newKey(1)];
  const requests: string[] = [];
  let issuer = '';
  const server: Server = createServer((req, res) => {
    requests.push(req.url ?? '');
    if (req.url === '/pool/.well-known/openid-configuration') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer: options.discoveryIssuer ?? issuer, jwks_uri: `${issuer}/jwks.json` }));
    } else if (req.url === '/pool/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          keys: keys.map((k) => ({
            ...k.publicKey.export({ format: 'jwk' }),
            kid: k.kid,
            alg: 'RS256',
            use: 'sig',
          })),
        }),
      );
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  issuer = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/pool`;
  const sign: TestIssuer['sign'] = (claims, opts = {}) => {
    const current = keys[keys.length - 1] as SigningKey;
    const now = Math.floor(Date.now() / 1000);
    const header = { alg: opts.alg ?? 'RS256', typ: 'JWT', kid: opts.kid ?? current.kid };
    const body = `${b64url(header)}.${b64url({ iss: issuer, sub: 'ann', iat: now, exp: now + 300, ...claims })}`;
    const signature = createSign('RSA-SHA256')
      .update(body)
      .sign(opts.key ?? current.privateKey)
      .toString('base64url');
    return `${body}.${signature}`;
  };
  return {
    get issuer() {
      return issuer;
    },
    requests,
    sign,
    idToken: (clientId, claims = {}) =>
      sign({
        aud: clientId,
        token_use: 'id',
        'cognito:username': 'ann',
        email: 'ann@example.com',
        ...claims,
      }),
    accessToken: (clientId, claims = {}) =>
      sign({ client_id: clientId, token_use: 'access', scope: 'openid email', username: 'ann', ...claims }),
    rotate: () => keys.push(newKey(keys.length + 1)),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
