/**
 * Version pins: a workflow step (or an orchestration's step) names `agent: "helper@3"` or `tool: "echo@2"` to run
 * that version of the definition instead of the latest. The name part is a definition name (`NameSchema`, which
 * has no "@"); the version is a whole number ≥ 1. Where a pin is honoured: the run's driver resolves it to the
 * definition's id when it writes the request (`shared/core/orchestration/driver.ts`), the request carries
 * `definition_version`, and the executor loads that version (`shared/core/executor/definition-cache.ts`).
 */
import { NameSchema } from './definition-fields.ts';
import * as z from './zod.ts';

export interface VersionPin {
  readonly name: string;
  /** Absent: the latest version. */
  readonly version?: number;
}

const PIN = /^(?<name>[^@]+)@(?<version>[^@]*)$/;
const MAX_VERSION = 1_000_000_000;

/** `name` or `name@version`; undefined when malformed (`pinnedNameIssue` says why). */
export function parsePin(value: string): VersionPin | undefined {
  return pinnedNameIssue(value) === undefined ? splitPin(value) : undefined;
}

function splitPin(value: string): VersionPin {
  const match = PIN.exec(value);
  if (match?.groups === undefined) return { name: value };
  return { name: match.groups.name as string, version: Number(match.groups.version) };
}

/** Why `value` is not a name or `name@version`, or undefined when it is. */
export function pinnedNameIssue(value: string): string | undefined {
  const match = PIN.exec(value);
  const name = match?.groups?.name ?? value;
  if (!NameSchema.safeParse(name).success)
    return `expected a name (1-128 letters, digits, ".", "_", ":" or "-") or name@<version>, got ${JSON.stringify(value)}`;
  if (match?.groups === undefined) return undefined;
  const version = match.groups.version as string;
  if (!/^[1-9][0-9]*$/.test(version) || Number(version) > MAX_VERSION)
    return `the version after "@" must be a whole number ≥ 1, got ${JSON.stringify(value)}`;
  return undefined;
}

/** The name a step's `agent` / `tool` names, pin or not (the name itself when malformed). */
export function pinnedName(value: string): string {
  return splitPin(value).name;
}

/** A step's `agent` or `tool`: a definition name, optionally pinned to one of its versions. */
export const PinnedNameSchema = z.string({ error: 'expected a string' }).check(
  z.superRefine((value, ctx) => {
    const issue = pinnedNameIssue(value);
    if (issue !== undefined) ctx.addIssue({ code: 'custom', message: issue, input: value });
  }),
);
