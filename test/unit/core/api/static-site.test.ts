import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { staticSite } from '#shared/core/api/static-site.ts';

describe('staticSite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'site-'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html>');
  writeFileSync(join(dir, 'app.js'), 'x');
  const site = staticSite(dir);

  it('serves the page at /ui/ uncached and its assets cached, with a same-origin content security policy', () => {
    const page = site.serve('GET', '/ui/');
    expect(page.statusCode).toBe(200);
    expect(page.headers['cache-control']).toBe('no-cache');
    expect(page.headers['content-security-policy']).toContain("connect-src 'self'");
    const js = site.serve('GET', '/ui/app.js');
    expect(js.headers['content-type']).toMatch(/javascript/);
    expect(js.headers['cache-control']).toContain('immutable');
  });

  it('redirects /ui to /ui/, answers 404 for other files and 405 for writes', () => {
    // Relative, so it stays under a REST API's stage: `/prod/ui` → `/prod/ui/`.
    expect(site.serve('GET', '/ui')).toMatchObject({ statusCode: 308, headers: { location: 'ui/' } });
    expect(new URL('ui/', 'https://api.example.com/prod/ui').pathname).toBe('/prod/ui/');
    expect(site.serve('GET', '/ui/../secret').statusCode).toBe(404);
    expect(site.serve('POST', '/ui/').statusCode).toBe(405);
  });

  it('says the dashboard is not built when its folder is missing', () => {
    const missing = staticSite(join(dir, 'nope'));
    expect(missing.serve('GET', '/ui/')).toMatchObject({ statusCode: 503 });
  });
});
