/**
 * Which provider and model a model string means. A definition's `model` is either `<provider>/<model id>`
 * (`bedrock/anthropic.claude-3-5-haiku-20241022-v1:0`, `openrouter/openai/gpt-4o-mini`, `offline/crumbs`) or a
 * bare model id without a slash (seed 002's `gpt-4`): the operator's alias for it (`CRUMBS_MODEL_ALIASES`), else
 * the stack's default provider (`CRUMBS_DEFAULT_LLM_PROVIDER`: `offline` locally, `crumbs:defaultLlmProvider` on
 * AWS). An agent without a model runs the alias `default`, else its provider's default model.
 *
 * Nothing that could only fail at call time passes: an unknown provider, a bare id on Bedrock that is not a
 * Bedrock model id, a provider without a default model are errors naming the choices. The rule manager reports
 * them as an `invalid` definition at apply time, and the status says which provider and model will run
 * (`llm: { provider, model }`); the executors resolve model strings with this same function and the same settings
 * before the call (`functions/wiring/llm-from-env.ts`), so the call runs what the status said.
 */
import { ENV } from '#shared/topology.ts';
import { ValidationError } from './errors.ts';
import * as z from './zod.ts';

export const LLM_PROVIDERS = [
  'bedrock',
  'openrouter',
  'openai',
  'ollama',
  'openai-compatible',
  'offline',
] as const;
export type LlmProvider = (typeof LLM_PROVIDERS)[number];

export const LlmProviderSchema = z.enum(LLM_PROVIDERS, {
  error: `expected one of ${LLM_PROVIDERS.join(', ')}`,
});

/** The model an agent without `model` runs: the alias `default`, else its provider's default model. */
export const DEFAULT_MODEL_ID = 'default';

/**
 * What `default` means on each provider when no alias says otherwise: the models this project names in its docs.
 * A provider without one (ollama, openai-compatible: whatever the server has) needs a model named.
 */
export const PROVIDER_DEFAULT_MODELS: Readonly<Partial<Record<LlmProvider, string>>> = {
  offline: DEFAULT_MODEL_ID,
  bedrock: 'amazon.nova-lite-v1:0',
  openai: 'gpt-4o-mini',
  openrouter: 'openai/gpt-4o-mini',
};

/**
 * The operator's table of model ids without a provider → `<provider>/<model id>` (`CRUMBS_MODEL_ALIASES`), e.g.
 * `{ "gpt-4": "openai/gpt-4o", "default": "bedrock/anthropic.claude-3-5-haiku-20241022-v1:0" }`.
 */
export type ModelAliases = Readonly<Record<string, string>>;

const ALIAS_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
/** At most this many aliases: the table rides in every function's environment. */
export const MAX_MODEL_ALIASES = 100;

/** `CRUMBS_MODEL_ALIASES`' shape: each name a bare id, each target `<provider>/<model id>` of a known provider. */
export const ModelAliasesSchema = z
  .record(
    z.string(),
    z.string().check(
      z.refine(
        (target) => LLM_PROVIDERS.some((p) => target.startsWith(`${p}/`) && target.length > p.length + 1),
        {
          error: `expected <provider>/<model id> with a provider of ${LLM_PROVIDERS.join(', ')}`,
        },
      ),
    ),
  )
  .check(
    // Keys checked here, not by the record's key schema, whose own message would replace this one.
    z.superRefine((aliases, ctx) => {
      const names = Object.keys(aliases);
      if (names.length > MAX_MODEL_ALIASES) {
        ctx.addIssue({
          code: 'custom',
          message: `at most ${MAX_MODEL_ALIASES} aliases, got ${names.length}`,
        });
      }
      for (const name of names.filter((n) => !ALIAS_NAME.test(n)).slice(0, 5)) {
        ctx.addIssue({
          code: 'custom',
          path: [name],
          message: 'an alias is a model id without a slash (1-128 letters, digits, ".", "_", ":" or "-")',
        });
      }
    }),
  );

/** A Bedrock model id is `<vendor>.<model>` (or an inference profile `<region>.<vendor>.<model>`). */
const BEDROCK_MODEL_ID = /^[a-z0-9-]+\.[A-Za-z0-9._:-]+$/;

export interface ResolvedModel {
  provider: LlmProvider;
  /** The provider's own model id (the part after `<provider>/`). */
  model: string;
}

/**
 * Resolves a model string (or its absence) as the definition's status reports it and the LLM client calls it:
 * `<provider>/<model id>` as written (`<provider>/default`: the provider's default model); a bare id through the
 * operator's aliases, else on the default provider — where Bedrock takes only Bedrock model ids, so `gpt-4` there
 * is refused naming the choices instead of failing at call time. Throws ValidationError at `path`.
 */
export function resolveModel(
  model: string | undefined,
  defaultProvider: LlmProvider | undefined,
  path = 'model',
  aliases: ModelAliases = {},
): ResolvedModel {
  const text = model?.trim() ?? '';
  const slash = text.indexOf('/');
  const refuse = (message: string): never => {
    throw new ValidationError([{ path, message }]);
  };
  if (slash >= 0) {
    const prefix = text.slice(0, slash);
    if (!(LLM_PROVIDERS as readonly string[]).includes(prefix)) {
      refuse(
        `"${text}" names the provider "${prefix}", which is not one of ${LLM_PROVIDERS.join(', ')}; ` +
          'write <provider>/<model id>, or a model id without a slash for the default provider',
      );
    }
    const provider = prefix as LlmProvider;
    const id = text.slice(slash + 1) || DEFAULT_MODEL_ID;
    return { provider, model: id === DEFAULT_MODEL_ID ? providerDefault(provider, refuse) : id };
  }
  const name = text || DEFAULT_MODEL_ID;
  const alias = Object.hasOwn(aliases, name) ? aliases[name] : undefined;
  if (alias !== undefined) return resolveModel(alias, undefined, path);
  if (defaultProvider === undefined) {
    return refuse(
      `"${name}" names no provider and this stack has no default provider (${ENV.defaultLlmProvider}) nor an ` +
        `alias for it (${ENV.modelAliases}); write <provider>/<model id>`,
    );
  }
  if (name === DEFAULT_MODEL_ID)
    return { provider: defaultProvider, model: providerDefault(defaultProvider, refuse) };
  if (defaultProvider === 'bedrock' && !BEDROCK_MODEL_ID.test(name)) {
    const names = Object.keys(aliases);
    refuse(
      `"${name}" names no provider, and the stack's default provider bedrock takes only Bedrock model ids ` +
        `(<vendor>.<model>, e.g. ${PROVIDER_DEFAULT_MODELS.bedrock}); write <provider>/<model id> (providers: ` +
        `${LLM_PROVIDERS.join(', ')}), a Bedrock model id, or an alias (${names.length > 0 ? names.join(', ') : 'none set'}; ` +
        `the operator sets them in ${ENV.modelAliases})`,
    );
  }
  return { provider: defaultProvider, model: name };
}

function providerDefault(provider: LlmProvider, refuse: (message: string) => never): string {
  return (
    PROVIDER_DEFAULT_MODELS[provider] ??
    refuse(
      `no model named, and ${provider} has no default model (whatever its server has): name one, ` +
        `${provider}/<model id>, or set the alias "default" (${ENV.modelAliases})`,
    )
  );
}
