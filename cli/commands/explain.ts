/**
 * `crumbs explain <definition-id> <breadcrumb-id>`: which trigger selector of the definition matches the
 * breadcrumb, or, for each selector, the first field that failed and why.
 */
import { definitionLimits } from '#shared/config.ts';
import { validateDefinition } from '#shared/domain/definition-validation.ts';
import { definitionPrincipal, type ParsedDefinition, triggerSelectors } from '#shared/domain/definitions.ts';
import { ValidationError } from '#shared/domain/errors.ts';
import { STATUS_SCHEMA } from '#shared/domain/protocol.ts';
import { definitionWarnings } from '#shared/domain/unknown-fields.ts';
import { explainTrigger } from '#shared/routing/explain.ts';
import { type Command, InputError, printJson, printWarnings, UsageError } from '../args.ts';

export const explainCommand: Command = {
  name: 'explain',
  summary: 'explain whether a definition is triggered by a breadcrumb, and why',
  usage: `Usage: crumbs explain <definition-id> <breadcrumb-id>

Compiles the definition's trigger selectors exactly as its EventBridge rule and runs them on the breadcrumb's
change event. Prints the selector that matched, or for each selector the first field that failed and why.`,
  options: {},
  async run(ctx) {
    const [definitionId, breadcrumbId, extra] = ctx.positionals;
    if (!definitionId || !breadcrumbId || extra !== undefined) {
      throw new UsageError('expected <definition-id> <breadcrumb-id>', true);
    }
    const client = ctx.client();
    const [definition, breadcrumb] = await Promise.all([
      client.getFull(definitionId),
      client.getFull(breadcrumbId),
    ]);
    const { kind, definition: parsed } = validated(definitionId, definition.schema_name, definition.context);
    // Its rule, as the rule manager recorded it: the name and the bus of the pool that holds it.
    const statuses = await client.listFirst(
      { schema_name: STATUS_SCHEMA, tag: `definition:${definitionId}`, view: 'full' },
      1,
    );
    const status = statuses.items[0]?.context;
    const rule =
      typeof status?.rule_name === 'string'
        ? {
            name: status.rule_name,
            event_bus: typeof status.event_bus === 'string' ? status.event_bus : null,
          }
        : null;
    const warnings = definitionWarnings(definition.schema_name, definition.context);
    const selectors = triggerSelectors(kind, parsed);
    const result = explainTrigger({
      workspace: definition.workspace,
      principal: definitionPrincipal(kind, parsed),
      selectors,
      breadcrumb,
    });
    if (ctx.global.json) {
      printJson(ctx.io, { definition: definitionId, breadcrumb: breadcrumbId, ...result, rule, warnings });
      return result.matched ? 0 : 1;
    }
    const out = ctx.io.stdout;
    printWarnings(ctx.io, definitionId, warnings);
    out(
      rule
        ? `${definitionId}: rule ${rule.name} on event bus ${rule.event_bus ?? '(unknown)'}\n`
        : `${definitionId}: no rule yet (crumbs rules shows its state)\n`,
    );
    if (result.matched) {
      out(`${breadcrumbId} triggers ${definitionId}: selector ${result.matchedSelector} matches\n`);
      out(`  ${JSON.stringify(selectors[result.matchedSelector ?? 0])}\n`);
      return 0;
    }
    out(`${breadcrumbId} does not trigger ${definitionId}\n`);
    if (result.envelope) out(`  ${result.envelope.field}: ${result.envelope.reason}\n`);
    for (const s of result.selectors) {
      out(`  selector ${s.index} ${JSON.stringify(selectors[s.index])}\n`);
      out(
        s.failure
          ? `    fails at ${s.failure.field}: ${s.failure.reason}\n`
          : '    matches on its own fields\n',
      );
    }
    return 1;
  },
};

/** The definition as the rule manager judges it; an invalid one has no rule to explain, so say why instead. */
function validated(id: string, schemaName: string, context: unknown): ParsedDefinition {
  try {
    return validateDefinition(schemaName, context, definitionLimits());
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    // Issue paths are relative to the context, except the schema name's own.
    const where = (path: string) => (path === 'schema_name' ? path : path ? `context.${path}` : 'context');
    const reasons = error.issues.map((i) => `${where(i.path)}: ${i.message}`).join('; ');
    throw new InputError(`${id} is not a valid definition, so no rule runs it: ${reasons}`, { cause: error });
  }
}
