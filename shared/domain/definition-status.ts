/**
 * The names by which the rule manager's status breadcrumbs are found. The rule manager records the outcome of
 * compiling each definition in one `definition.status.v1` breadcrumb (`shared/core/rules/status-breadcrumbs.ts`),
 * tagged `definition:<id>` and, while the definition has a rule, `rule:<rule name>`: the second tag lets the DLQ
 * handler go from a dead-lettered event's RULE_ARN back to the definition without asking EventBridge. The schema
 * name is the protocol's (`STATUS_SCHEMA` in `protocol.ts`).
 */
/** The tag of the status breadcrumb of the definition whose compiled rule is `ruleName`. */
export function ruleTag(ruleName: string): string {
  return `rule:${ruleName}`;
}

/**
 * Whether a status breadcrumb is crumbs' own record. Anyone in a workspace can write a breadcrumb of this schema (the
 * API writes it as `user:…`, a plain put is adopted as `user:…` whatever it claims), but only crumbs writes as
 * `system:…`; a status that is not is not believed (the definition reads as pending until the rule manager writes).
 */
export function isCrumbsStatus(status: { updated_by: string }): boolean {
  return status.updated_by.startsWith('system:');
}
