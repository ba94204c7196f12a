/**
 * The memory room's part of the API contract (`shared/core/api/contract/route-table.ts` takes these entries in):
 * a person's records, one record, and forgetting — for the OpenAPI document and the contract test.
 */
import type { RouteContract } from '#shared/core/api/contract/route-table.ts';
import { MemoryRecordSchema } from '#shared/domain/memory.ts';
import * as z from '#shared/domain/zod.ts';

const MemoryRecordViewSchema = z.object({
  id: z.string(),
  version: z.number(),
  updated_at: z.string(),
  ...MemoryRecordSchema.shape,
});

export const MemoryRecordListSchema = z.object({ actor: z.string(), items: z.array(MemoryRecordViewSchema) });
export const MemoryRecordAnswerSchema = MemoryRecordViewSchema;
export const MemoryForgottenSchema = z.object({
  actor: z.string(),
  forgotten: z.number(),
  turns_removed: z.number(),
});

const PATH = '/v1/workspaces/{ws}/memory';
const whose = {
  actor: {
    description:
      "Whose memory: the token's `sub` by default; another person's needs an operator's token (workspaces `*`).",
  },
  memory_id: { description: 'Only the records of this memory definition.' },
};

export const MEMORY_ROUTE_CONTRACTS: readonly RouteContract[] = [
  {
    method: 'GET',
    path: PATH,
    operationId: 'listMemory',
    summary: "A person's current memory records, newest first.",
    tag: 'memory',
    query: whose,
    responses: { 200: { description: 'OK', schema: MemoryRecordListSchema } },
    errors: [400],
  },
  {
    method: 'DELETE',
    path: PATH,
    operationId: 'forgetMemory',
    summary:
      "Forget: every record of the person (of one memory when named) with its versions and vectors, and the person's own turns they came from.",
    tag: 'memory',
    query: whose,
    responses: { 200: { description: 'Forgotten.', schema: MemoryForgottenSchema } },
    errors: [400],
  },
  {
    method: 'GET',
    path: `${PATH}/{id}`,
    operationId: 'getMemoryRecord',
    summary: "One of the person's memory records (its history is the breadcrumb's).",
    tag: 'memory',
    query: { actor: whose.actor },
    responses: { 200: { description: 'OK', schema: MemoryRecordAnswerSchema } },
    errors: [400, 404],
  },
];
