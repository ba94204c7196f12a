import { describe, expect, it } from 'vitest';
import {
  assertPublicUrl,
  PrivateNetworkError,
  privateNetworkAllowed,
} from '#shared/adapters/network/network-guard.ts';
import { ValidationError } from '#shared/domain/errors.ts';

const resolvesTo =
  (...addresses: string[]) =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('assertPublicUrl', () => {
  it('lets a public URL through and returns it parsed', async () => {
    const url = await assertPublicUrl('https://api.example.com/v1?q=1', {
      allowPrivate: false,
      lookup: resolvesTo('93.184.216.34'),
    });
    expect(url.hostname).toBe('api.example.com');
  });

  it('refuses a name when any of its addresses is private (a public name pointing at loopback)', async () => {
    await expect(
      assertPublicUrl('http://sneaky.example.com/', {
        allowPrivate: false,
        lookup: resolvesTo('93.184.216.34', '127.0.0.1'),
      }),
    ).rejects.toThrow(/sneaky\.example\.com resolves to 127\.0\.0\.1.*--allow-private-network/);
  });

  it('refuses the Lambda Runtime API, metadata and private literals as PrivateNetworkError', async () => {
    for (const url of [
      'http://127.0.0.1:9001/2018-06-01/runtime/invocation/next',
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:10.0.0.1]/',
      'http://192.168.1.10/',
    ]) {
      await expect(assertPublicUrl(url, { allowPrivate: false }), url).rejects.toBeInstanceOf(
        PrivateNetworkError,
      );
    }
  });

  it('refuses other protocols and names that do not resolve, even when private addresses are allowed', async () => {
    await expect(assertPublicUrl('file:///etc/passwd', { allowPrivate: true })).rejects.toThrow(
      /only http and https/,
    );
    await expect(
      assertPublicUrl('http://nowhere.invalid/', {
        allowPrivate: false,
        lookup: async () => {
          throw new Error('ENOTFOUND');
        },
      }),
    ).rejects.toThrow(/cannot resolve nowhere\.invalid/);
  });

  it('lets loopback through only with allowPrivate', async () => {
    await expect(assertPublicUrl('http://127.0.0.1:8080/', { allowPrivate: true })).resolves.toBeInstanceOf(
      URL,
    );
  });
});

describe('privateNetworkAllowed', () => {
  it('is off unless CRUMBS_ALLOW_PRIVATE_NETWORK is 1 or true, and refuses other values', () => {
    expect(privateNetworkAllowed({})).toBe(false);
    expect(privateNetworkAllowed({ CRUMBS_ALLOW_PRIVATE_NETWORK: '0' })).toBe(false);
    expect(privateNetworkAllowed({ CRUMBS_ALLOW_PRIVATE_NETWORK: '1' })).toBe(true);
    expect(privateNetworkAllowed({ CRUMBS_ALLOW_PRIVATE_NETWORK: 'true' })).toBe(true);
    expect(() => privateNetworkAllowed({ CRUMBS_ALLOW_PRIVATE_NETWORK: 'yes' })).toThrow(ValidationError);
  });
});
