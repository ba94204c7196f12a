import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedFetch } from '#shared/adapters/network/guarded-fetch.ts';
import {
  HostNotAllowedError,
  NetworkGuardError,
  PrivateNetworkError,
} from '#shared/adapters/network/network-guard.ts';
import { NonRetriableError } from '#shared/domain/errors.ts';
import { startHttpServer, type TestHttpServer } from '../../../support/http-server.ts';

const publicDns = async () => [{ address: '93.184.216.34', family: 4 }];

describe('guardedFetch', () => {
  let server: TestHttpServer;
  beforeAll(async () => {
    server = await startHttpServer((req, res) => {
      if (req.path === '/to-metadata') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data' });
        res.end();
        return;
      }
      if (req.path === '/see-other') {
        res.writeHead(303, { location: '/echo' });
        res.end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ method: req.method, body: req.body }));
    });
  });
  afterAll(() => server.close());

  it('refuses loopback unless the stack allows private networks, and reads the switch at each request', async () => {
    let allowed = false;
    const fetchIt = guardedFetch({ allowPrivate: () => allowed });
    await expect(fetchIt(`${server.url}/echo`)).rejects.toBeInstanceOf(PrivateNetworkError);
    allowed = true;
    const response = await fetchIt(`${server.url}/echo`);
    expect(await response.json()).toEqual({ method: 'GET', body: '' });
  });

  it('checks every redirect hop, so an allowed server cannot bounce a call to the metadata address', async () => {
    const calls: string[] = [];
    const fetchIt = guardedFetch({
      allowPrivate: false,
      lookup: publicDns,
      fetch: async (url) => {
        calls.push(String(url));
        return new Response(null, { status: 302, headers: { location: 'http://169.254.169.254/latest/' } });
      },
    });
    await expect(fetchIt('https://partner.example.com/')).rejects.toThrow(/169\.254\.169\.254/);
    expect(calls).toEqual(['https://partner.example.com/']);
  });

  it('refuses hosts off the allow-list, naming the field, on the first call and on redirects', async () => {
    const fetchIt = guardedFetch({
      allowPrivate: true,
      allowedHosts: ['127.0.0.1'],
      fields: { allowedHosts: 'transport.api.allowed_hosts' },
    });
    await expect(fetchIt(`${server.url}/to-metadata`)).rejects.toThrow(
      /host 169\.254\.169\.254 is not in transport\.api\.allowed_hosts \(127\.0\.0\.1\)/,
    );
    await expect(fetchIt('http://localhost:1/')).rejects.toBeInstanceOf(HostNotAllowedError);
    // Every refusal is a NetworkGuardError and not retriable: a retry would be refused the same way.
    const refused = await fetchIt('http://localhost:1/').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(NetworkGuardError);
    expect(refused).toBeInstanceOf(NonRetriableError);
  });

  it('follows a 303 as a GET without the body, and stops after maxRedirects', async () => {
    const fetchIt = guardedFetch({ allowPrivate: true });
    const response = await fetchIt(`${server.url}/see-other`, { method: 'POST', body: 'x' });
    expect(await response.json()).toEqual({ method: 'GET', body: '' });
    const looping = guardedFetch({
      allowPrivate: false,
      lookup: publicDns,
      maxRedirects: 2,
      fields: { maxRedirects: 'config.max_redirects' },
      fetch: async () => new Response(null, { status: 302, headers: { location: '/again' } }),
    });
    await expect(looping('https://loop.example.com/')).rejects.toThrow(
      /more than 2 redirects \(config\.max_redirects\)/,
    );
  });

  it('refuses other protocols', async () => {
    await expect(guardedFetch({ allowPrivate: true })('file:///etc/passwd')).rejects.toThrow(
      /only http and https/,
    );
  });
});
