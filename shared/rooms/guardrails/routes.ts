/**
 * The guardrails room's API: the write gate of `guardrail.def.v1` (only a person, as themselves, writes or deletes a
 * policy, and only a policy that can be used: a pattern that cannot compile or has no bound is refused naming it),
 * a dry run of a policy on a text (`POST …/guardrails/{id}/test`, what `crumbs guardrails test` calls), the
 * workspace's policies with their problems, and a thread's interventions (what the dashboard shows).
 */

import { GuardrailTestBodySchema } from '#shared/core/api/contract/schemas.ts';
import { json } from '#shared/core/api/http.ts';
import type { RoomApi, RoomRoute } from '#shared/core/api/rooms.ts';
import { isPerson, parseOrThrow } from '#shared/domain/breadcrumb.ts';
import { ForbiddenError, NotFoundError, ValidationError } from '#shared/domain/errors.ts';
import { PEOPLE_ONLY_SCHEMAS, threadTag } from '#shared/domain/protocol.ts';
import { parsePin } from '#shared/domain/version-pin.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import type { Log } from '#shared/ports/log.ts';
import {
  GUARDRAIL_DEF_SCHEMA,
  GUARDRAIL_EVENT_SCHEMA,
  GuardrailDefinitionSchema,
  guardrailIssues,
} from './definition.ts';
import { Guard } from './guard.ts';
import { policiesFor } from './policies.ts';
import { Placeholders } from './vault.ts';

const MAX_EVENTS = 200;

export function guardrailsApi(deps: { store: BreadcrumbStore; log?: Log }): RoomApi {
  const { store } = deps;
  const ws = '(?<ws>[^/]+)';
  const routes: RoomRoute[] = [
    {
      template: '/v1/workspaces/{ws}/guardrails',
      pattern: new RegExp(`^/v1/workspaces/${ws}/guardrails$`),
      methods: {
        GET: async (_req, p) => {
          const page = await store.list({
            workspace: p.ws as string,
            schema_name: GUARDRAIL_DEF_SCHEMA,
            limit: 100,
          });
          return json(200, {
            items: page.items.map((item) => {
              const issues = guardrailIssues(item.context);
              return {
                id: item.id,
                guardrail_id: (item.context as { guardrail_id?: unknown }).guardrail_id,
                version: item.version,
                state: issues.length === 0 ? 'active' : 'invalid',
                errors: issues,
              };
            }),
          });
        },
      },
    },
    {
      template: '/v1/workspaces/{ws}/guardrails/{id}/test',
      pattern: new RegExp(`^/v1/workspaces/${ws}/guardrails/(?<id>[^/]+)/test$`),
      methods: {
        POST: async (req, p) => {
          const body = parseOrThrow(GuardrailTestBodySchema, parseBody(req.body));
          const point = body.point ?? 'input';
          const named = decodeURIComponent(p.id as string);
          if (parsePin(named) === undefined) throw new NotFoundError(`no guardrail ${named}`);
          const { policies, unusable } = await policiesFor(store, p.ws as string, {
            agent_id: '#guardrails-test',
            guardrails: [named],
          });
          const policy = policies[0];
          if (policy === undefined)
            throw new NotFoundError(`guardrail ${named}: ${unusable[0]?.reason ?? 'not found'}`);
          const guard = new Guard([policy], new Placeholders(), { judge: false });
          const part = point === 'tool_result' ? 'tool_result' : point === 'input' ? 'user' : 'assistant';
          const result = await guard.check(point, [{ part, text: body.text }]);
          return json(200, {
            guardrail_id: policy.id,
            version: policy.version,
            point,
            text: result.texts[0],
            ...(result.blocked ? { blocked: result.blocked } : {}),
            findings: result.findings.map((f) => ({
              check: f.check,
              type: f.type,
              action: f.action,
              ...(f.start !== undefined ? { start: f.start, end: f.end } : {}),
            })),
            placeholders: guard.placeholders.entries.map((e) => ({
              placeholder: e.placeholder,
              type: e.type,
            })),
            not_run: [...guard.notRun],
          });
        },
      },
    },
    {
      template: '/v1/workspaces/{ws}/threads/{thread}/guardrail-events',
      pattern: new RegExp(`^/v1/workspaces/${ws}/threads/(?<thread>[^/]+)/guardrail-events$`),
      methods: {
        GET: async (_req, p) => {
          const thread = decodeURIComponent(p.thread as string);
          const page = await store.list({
            workspace: p.ws as string,
            schema_name: GUARDRAIL_EVENT_SCHEMA,
            tag: threadTag(thread),
            limit: MAX_EVENTS,
          });
          return json(200, {
            items: page.items.map((e) => ({ id: e.id, created_at: e.created_at, ...(e.context as object) })),
          });
        },
      },
    },
  ];
  return {
    routes,
    gate: {
      schemas: PEOPLE_ONLY_SCHEMAS,
      check: (write) => {
        if (!isPerson(write.caller.principal)) {
          deps.log?.warn('refused a guardrail policy write: not a person', {
            workspace: write.workspace,
            principal: write.caller.principal,
            op: write.op,
          });
          throw new ForbiddenError(
            `${write.schema_name} is written and deleted by people only (as themselves); ${write.caller.principal} may not ${write.op} it`,
          );
        }
        if (write.context === undefined) return;
        const issues = guardrailIssues(write.context);
        if (issues.length > 0)
          throw new ValidationError(
            issues,
            `invalid ${GUARDRAIL_DEF_SCHEMA}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
          );
        GuardrailDefinitionSchema.parse(write.context);
      },
    },
  };
}

function parseBody(body: string | undefined): unknown {
  try {
    return JSON.parse(body ?? '');
  } catch {
    throw new ValidationError([{ path: '(body)', message: 'expected a JSON object { text, point? }' }]);
  }
}
