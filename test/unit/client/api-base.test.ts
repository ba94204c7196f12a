/**
 * The dashboard finds the API under the path it was served from: nothing locally, the stage on AWS.
 */
import { describe, expect, it } from 'vitest';
import { apiBaseOf } from '#shared/client/api-base.ts';

describe('apiBaseOf', () => {
  it('is empty for the dashboard at /ui (crumbs dev)', () => {
    expect(apiBaseOf('/ui/')).toBe('');
    expect(apiBaseOf('/ui')).toBe('');
  });

  it("is the stage for the dashboard under a REST API's stage", () => {
    expect(apiBaseOf('/prod/ui/')).toBe('/prod');
    expect(apiBaseOf('/dev/ui/index.html')).toBe('/dev');
  });

  it('is not fooled by a segment that only starts with ui', () => {
    expect(apiBaseOf('/prod/uikit/ui/')).toBe('/prod/uikit');
    expect(apiBaseOf('/prod/ui-x/')).toBe('');
  });
});
