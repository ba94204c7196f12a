/**
 * A step that pins `agent@N` or `tool@N` (`shared/domain/version-pin.ts`) must name a version the workspace has
 * when its definition is applied: otherwise the definition is `invalid` at that step's field, like a `secret_ref`
 * naming no secret. The agent or tool is looked up in the definition's own workspace only. A pinned definition
 * deleted later is not caught here: the run's step fails with the reason when it gets there (`driver.ts`).
 */

import type { Breadcrumb } from '#shared/domain/breadcrumb.ts';
import { formatPath } from '#shared/domain/breadcrumb.ts';
import { type ParsedDefinition, parseDefinition } from '#shared/domain/definitions.ts';
import { type FieldIssue, ValidationError } from '#shared/domain/errors.ts';
import { AGENT_DEF_SCHEMA, LEGACY_AGENT_DEF_SCHEMA, TOOL_DEF_SCHEMA } from '#shared/domain/protocol.ts';
import { nestedSteps } from '#shared/domain/steps/kinds.ts';
import { parsePin } from '#shared/domain/version-pin.ts';
import type { StepDefinition } from '#shared/domain/workflow-definition.ts';
import type { BreadcrumbStore } from '#shared/ports/breadcrumb-store.ts';
import { definitionIds, versionToRun } from '../executor/versions.ts';

/** Pins checked per definition: each costs a read or two; more is refused rather than read. */
const MAX_PINS = 50;

interface Pin {
  readonly path: PropertyKey[];
  readonly kind: 'agent' | 'tool';
  readonly name: string;
  readonly version: number;
}

function stepsOf(parsed: ParsedDefinition): { steps: readonly StepDefinition[]; at: PropertyKey[] } {
  if (parsed.kind === 'workflow') return { steps: parsed.definition.steps, at: ['steps'] };
  if (parsed.kind === 'agent') {
    return { steps: parsed.definition.orchestration?.steps ?? [], at: ['orchestration', 'steps'] };
  }
  return { steps: [], at: [] };
}

function pinsOf(parsed: ParsedDefinition): Pin[] {
  const pins: Pin[] = [];
  const visit = (step: StepDefinition, path: PropertyKey[]) => {
    for (const kind of ['agent', 'tool'] as const) {
      const named = step[kind];
      const pin = named === undefined ? undefined : parsePin(named);
      if (pin?.version !== undefined)
        pins.push({ path: [...path, kind], kind, name: pin.name, version: pin.version });
    }
    for (const [nested, at] of nestedSteps(step)) visit(nested, [...path, ...at]);
  };
  const { steps, at } = stepsOf(parsed);
  steps.forEach((step, i) => {
    visit(step, [...at, i]);
  });
  return pins;
}

/** The pins of a workflow (or an agent's fixed orchestration) that name no version of the workspace. */
export async function missingPins(
  workspace: string,
  record: Pick<Breadcrumb, 'schema_name' | 'context'>,
  store: Pick<BreadcrumbStore, 'list' | 'get' | 'getVersion'>,
): Promise<FieldIssue[]> {
  let parsed: ParsedDefinition;
  try {
    parsed = parseDefinition(record.schema_name, record.context);
  } catch (error) {
    if (error instanceof ValidationError) return [];
    throw error;
  }
  const pins = pinsOf(parsed);
  if (pins.length === 0) return [];
  if (pins.length > MAX_PINS) {
    return [{ path: formatPath(pins[MAX_PINS]?.path ?? []), message: `at most ${MAX_PINS} pinned steps` }];
  }
  const ids = {
    agent: await definitionIds(store, workspace, [AGENT_DEF_SCHEMA, LEGACY_AGENT_DEF_SCHEMA]),
    tool: await definitionIds(store, workspace, [TOOL_DEF_SCHEMA]),
  };
  const issues: FieldIssue[] = [];
  for (const pin of pins) {
    const path = formatPath(pin.path);
    const id = ids[pin.kind].get(pin.name);
    const at = id === undefined ? undefined : await versionToRun(store, workspace, id, pin.name, pin.version);
    if (at === undefined) {
      issues.push({
        path,
        message: `workspace ${JSON.stringify(workspace)} has no ${pin.kind} "${pin.name}"`,
      });
    } else if ('error' in at) {
      issues.push({ path, message: at.error });
    }
  }
  return issues;
}
