/**
 * Dashboard files. Triggered by the front door (API Gateway REST API, `GET /ui`, `GET /ui/{proxy+}`, buffered
 * integrations without the authorizer: the page is public, its data calls are not) — and locally by the local
 * stack's server. Reads the built dashboard from `CRUMBS_UI_DIR` (the folder `cdk synth` bundles beside this
 * handler, or the one `crumbs dev` builds), and answers `/ui/sign-in.json` from the sign-in settings (the issuer's
 * discovery document, once, when the stack does not give the endpoints). Writes nothing.
 */
import { fileURLToPath } from 'node:url';
import middy from '@middy/core';
import type { HttpEvent, HttpResult } from '#shared/core/api/http.ts';
import { signInSettings } from '#shared/core/api/sign-in.ts';
import { staticSite } from '#shared/core/api/static-site.ts';
import { ENV } from '#shared/topology.ts';
import { measureHttpAnswer } from '../wiring/metrics.ts';
import { instrumented, powertools } from '../wiring/powertools.ts';

const pt = powertools('crumbs-ui', []);
const site = staticSite(process.env[ENV.uiDir] || fileURLToPath(new URL('./ui/', import.meta.url)), {
  // The Chat view streams answers from the delta channel (AppSync Events' realtime endpoint).
  realtimeUrl: process.env[ENV.eventsRealtimeUrl] || undefined,
});

const signIn = signInSettings();

export const handler = instrumented(
  middy(async (event: HttpEvent): Promise<HttpResult> => {
    const answered = site.serve(event.httpMethod, event.path, await signIn());
    measureHttpAnswer(pt.metrics, answered.statusCode);
    return answered;
  }),
  pt,
);
